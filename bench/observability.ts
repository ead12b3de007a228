/**
 * What metrics and traces cost a tool call (`npm run bench:observability`), two ways, each in child
 * processes running the suite's figures (bench/suite.ts, `BENCH_ONLY`); both report each call's cost at
 * p50 with its 95% interval, from pairs of turns of 30 calls, so the machine's drift moves both sides
 * of a pair alike:
 *
 * - on over off, the whole cost: two server processes as `npm start` runs them, one with
 *   `OTEL_SDK_DISABLED=true` (no tracer at all) and one exporting every span over OTLP/HTTP to a
 *   receiver in this process (which takes each batch and answers at once) with `/metrics` served,
 *   take turns at the same turns (the suite's `tracing_on_over_off`).
 * - traced over untraced, in one process: the suite's `tracing_cost`, with the defaults (spans stored
 *   for Letta's trace API) and with the exporter too; turns with a sampled trace context alternate with
 *   turns whose context is not sampled. Beside it, the workflow sandbox's part alone: a traced and an
 *   untraced turn's histories replayed in turn.
 *
 * The target: at most 1 ms per tool call at p50 with the exporter on. Writes bench/observability.json.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { projectRoot } from '../src/paths';
import { writeFormatted } from './report';
import type { Percentiles } from './stats';

const TARGET_MS = 1;
const OUT = path.join(projectRoot, 'bench', 'observability.json');

/** An OTLP/HTTP receiver that takes every export and answers at once: what it took, in bytes. */
async function startReceiver() {
  let bytes = 0;
  let exports = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      exports += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    taken: () => ({ exports, bytes }),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/**
 * The suite's `figures` in a child process with `env` added: its results. Not a synchronous child: the
 * receiver answers the child's exports from this process's event loop.
 */
async function suite<T>(figures: string, env: Record<string, string>): Promise<T> {
  const { stdout: output } = await promisify(execFile)(process.execPath, [path.join(__dirname, 'suite.js')], {
    env: { ...process.env, BENCH_ONLY: figures, ...env },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(output.slice(output.indexOf('\n{') + 1)) as T;
}

/** bench/suite.ts's tracedOverUntraced, in time or in this process's CPU time. */
interface PairedCost {
  cost_per_call: Percentiles;
  /** Where the p50 lies, 95% of the time. */
  cost_p50_interval_95: [number, number];
}

interface TracedOverUntraced {
  calls_per_turn: number;
  time_ms: PairedCost;
  cpu_ms: PairedCost;
}

/**
 * bench/suite.ts's tracedReplayOverUntraced: the workflow sandbox's part, per call, with the server's
 * tracer in the sandbox (`sink_tracer`) and with the SDK's (`sdk_tracer`).
 */
type ReplayedTracedOverUntraced = Record<'sink_tracer' | 'sdk_tracer', { cost_per_call_ms: Percentiles }>;

/**
 * The suite's tracing_cost figure with `env`: a traced call over an untraced one, by call, and the
 * workflow side's part of it.
 */
async function paired(env: Record<string, string>) {
  const { tracing_cost: cost } = await suite<{
    tracing_cost: {
      builtin: TracedOverUntraced;
      workflow_replay: ReplayedTracedOverUntraced;
      mcp: { stdio: TracedOverUntraced; streamable_http: TracedOverUntraced };
    };
  }>('tracing_cost', env);
  const calls: Record<string, TracedOverUntraced> = {
    builtin_call: cost.builtin,
    mcp_stdio_call: cost.mcp.stdio,
    mcp_http_call: cost.mcp.streamable_http,
  };
  return { calls, workflowSide: cost.workflow_replay };
}

/** The suite's on-over-off figure, exporting to `endpoint`: each call's cost, by call. */
async function onOverOff(endpoint: string): Promise<Record<string, TracedOverUntraced>> {
  const { tracing_on_over_off: cost } = await suite<{
    tracing_on_over_off: {
      builtin: TracedOverUntraced;
      mcp: { stdio: TracedOverUntraced; streamable_http: TracedOverUntraced };
    };
  }>('tracing_on_over_off', { BENCH_OTLP_ENDPOINT: endpoint });
  return {
    builtin_call: cost.builtin,
    mcp_stdio_call: cost.mcp.stdio,
    mcp_http_call: cost.mcp.streamable_http,
  };
}

async function main() {
  const receiver = await startReceiver();
  // `stored` (the defaults: spans kept for Letta's trace API, nothing exported, no /metrics) says how
  // much of the cost is the spans themselves.
  const modes: Record<string, Record<string, string>> = {
    stored: {},
    on: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '200', BENCH_METRICS: '1' },
  };
  const pairedCosts: Record<string, Record<string, TracedOverUntraced>> = {};
  const workflowSide: Record<string, ReplayedTracedOverUntraced> = {};
  let onOverOffCosts: Record<string, TracedOverUntraced>;
  try {
    console.log('on over off, in two processes…');
    onOverOffCosts = await onOverOff(receiver.url);
    for (const mode of ['stored', 'on']) {
      console.log(`traced over untraced, ${mode}…`);
      ({ calls: pairedCosts[mode], workflowSide: workflowSide[mode] } = await paired(modes[mode]));
    }
  } finally {
    await receiver.close();
  }
  const costs = [...Object.values(onOverOffCosts), ...Object.values(pairedCosts.on)];
  const results = {
    on_over_off: onOverOffCosts,
    paired: pairedCosts,
    workflow_side_replayed: workflowSide,
    target_ms: TARGET_MS,
    within_target: costs.every((call) => call.time_ms.cost_per_call.p50 <= TARGET_MS),
    // The whole 95% interval of each p50 at or under the target: the measurement's noise cannot hide a miss.
    within_target_beyond_noise: costs.every((call) => call.time_ms.cost_p50_interval_95[1] <= TARGET_MS),
    receiver: receiver.taken(),
  };
  console.log(JSON.stringify(results, null, 2));
  await writeFormatted(OUT, JSON.stringify(results, null, 2));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
