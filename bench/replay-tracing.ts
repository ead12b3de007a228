/**
 * The workflow side of a traced call, alone (bench/suite.ts's `tracing_cost.workflow_replay`): a traced
 * and an untraced turn's histories, replayed in turn by one replay worker, in a process of its own so
 * that no server shares its threads. A replay makes the same spans as the turn did (only the sink
 * drops them), without the server, the model or the database in the way.
 *
 *   node dist/bench/replay-tracing.js <traced.binpb> <untraced.binpb> <calls per turn> <rounds>
 *
 * It replays them with the server's workflow interceptors (`sink_tracer`) and with the SDK's own
 * OpenTelemetry ones in place of src/observability/workflow-tracing.ts (`sdk_tracer`: the same
 * interceptors and commands, with the SDK's tracer), and writes each one's figures to BENCH_OUT.
 */
import fs from 'node:fs';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { replayOptions, WORKFLOW_INTERCEPTOR_MODULES } from '../src/observability/temporal';
import { WORKFLOWS_PATH } from '../src/temporal/worker';
import { medianInterval, percentiles, perUnit, WARMUP } from './stats';

const REPLAYED_INTERCEPTORS: Record<string, string[]> = {
  sink_tracer: WORKFLOW_INTERCEPTOR_MODULES,
  sdk_tracer: [
    WORKFLOW_INTERCEPTOR_MODULES[0],
    require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
  ],
};

type History = temporal.api.history.v1.IHistory;

/**
 * `histories` (a traced turn's, an untraced turn's) replayed `rounds` times, which goes first changing
 * each round: each one's replay times, in ms.
 */
async function replayTimes(histories: History[], workflowModules: string[], rounds: number) {
  const replays = Array.from({ length: WARMUP + rounds }, (_, round) => {
    const pair = histories.map((history, j) => ({ workflowId: `${round}-${j}`, history }));
    return round % 2 ? pair.reverse() : pair;
  }).flat();
  const times: number[][] = histories.map(() => []);
  let since = performance.now();
  for await (const result of Worker.runReplayHistories(
    {
      workflowsPath: WORKFLOWS_PATH,
      replayName: 'tracing-cost',
      ...replayOptions,
      interceptors: { workflowModules },
    },
    replays,
  )) {
    if (result.error) throw result.error;
    const [round, j] = result.workflowId.split('-').map(Number);
    if (round >= WARMUP) times[j].push(performance.now() - since);
    since = performance.now();
  }
  return times;
}

async function main() {
  const [tracedFile, untracedFile, calls, rounds] = process.argv.slice(2);
  const histories = [tracedFile, untracedFile].map((file) =>
    temporal.api.history.v1.History.decode(fs.readFileSync(file)),
  );
  const figures: Record<string, unknown> = {};
  for (const [name, modules] of Object.entries(REPLAYED_INTERCEPTORS)) {
    const [traced, untraced] = await replayTimes(histories, modules, Number(rounds));
    const cost = perUnit({ a: traced, b: untraced }, Number(calls));
    figures[name] = {
      traced_turn_ms: percentiles(traced),
      untraced_turn_ms: percentiles(untraced),
      cost_per_call_ms: percentiles(cost),
      cost_p50_interval_95_ms: medianInterval(cost),
    };
  }
  fs.writeFileSync(process.env.BENCH_OUT!, JSON.stringify(figures));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
