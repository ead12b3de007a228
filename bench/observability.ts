/**
 * What metrics and traces cost a tool call (`npm run bench:observability`), two ways, each in child
 * processes running the suite's figures (bench/suite.ts, `BENCH_ONLY`):
 *
 * - paired, the target's measure: the suite's `tracing_cost` in one process, with the defaults (spans
 *   stored for Letta's trace API) and with an exporter too (spans also sent over OTLP/HTTP to a receiver
 *   in this process that takes each batch and answers at once; `/metrics` served). Turns traced and
 *   turns not (their trace context unsampled) alternate in the same process, so the machine's drift
 *   moves both alike; the target is at most 1 ms per tool call at p50 with the exporter on.
 * - by process: the suite's built-in and MCP call figures in processes that take turns between off
 *   (`OTEL_SDK_DISABLED=true`: no tracer at all), the defaults and on, `BENCH_OBSERVABILITY_ROUNDS`
 *   times each (default 3). This also counts what an unsampled request costs (the tracer installed,
 *   contexts propagated), but two processes of the same settings differ by more than the cost measured
 *   (the Temporal server, the JIT and the heap are each their own), so it bounds the cost rather than
 *   measures it.
 *
 * Writes bench/observability.json.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { projectRoot } from '../src/paths';
import { writeFormatted } from './report';
import { percentiles, type Percentiles } from './stats';

const ROUNDS = Number(process.env.BENCH_OBSERVABILITY_ROUNDS ?? 3);
const TARGET_MS = 1;
const OUT = path.join(projectRoot, 'bench', 'observability.json');

/** The per-call medians this compares, by where they sit in the suite's results. */
const FIGURES: Record<string, (results: Results) => number> = {
  builtin_call_ms: (r) => r.orchestration_overhead.in_one_reply.per_call_ms.p50,
  mcp_stdio_call_ms: (r) => r.mcp_tool_call.stdio.engine.per_call_ms.p50,
  mcp_http_call_ms: (r) => r.mcp_tool_call.streamable_http.engine.per_call_ms.p50,
};

type PerCall = { per_call_ms: { p50: number } };
interface Results {
  orchestration_overhead: { in_one_reply: PerCall };
  mcp_tool_call: { stdio: { engine: PerCall }; streamable_http: { engine: PerCall } };
}

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

/** One run of the suite's call figures: their per-call medians. */
async function measure(env: Record<string, string>): Promise<Record<string, number>> {
  const results = await suite<Results>('orchestration_overhead,mcp_tool_call', env);
  return Object.fromEntries(Object.entries(FIGURES).map(([name, of]) => [name, of(results)]));
}

/** bench/suite.ts's tracedOverUntraced: time and this process's CPU time per call. */
interface TracedOverUntraced {
  traced_per_call_ms: Percentiles;
  untraced_per_call_ms: Percentiles;
  cost_per_call_ms: Percentiles;
  cpu_cost_per_call_ms: Percentiles;
}

/** The suite's tracing_cost figure with `env`: a traced call over an untraced one, by call. */
async function paired(env: Record<string, string>): Promise<Record<string, TracedOverUntraced>> {
  const { tracing_cost: cost } = await suite<{
    tracing_cost: {
      builtin: TracedOverUntraced;
      mcp: { stdio: TracedOverUntraced; streamable_http: TracedOverUntraced };
    };
  }>('tracing_cost', env);
  return {
    builtin_call: cost.builtin,
    mcp_stdio_call: cost.mcp.stdio,
    mcp_http_call: cost.mcp.streamable_http,
  };
}

const round2 = (n: number) => Math.round(n * 100) / 100;

async function main() {
  const receiver = await startReceiver();
  // Each side's settings; `stored` (the defaults: spans kept for Letta's trace API, nothing exported,
  // no /metrics) says how much of the cost is the spans themselves.
  const modes: Record<string, Record<string, string>> = {
    off: { OTEL_SDK_DISABLED: 'true' },
    stored: {},
    on: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '200', BENCH_METRICS: '1' },
  };
  const rounds: Record<string, Record<string, number>>[] = [];
  const pairedCosts: Record<string, Record<string, TracedOverUntraced>> = {};
  try {
    for (const mode of ['stored', 'on']) {
      console.log(`paired, ${mode}…`);
      pairedCosts[mode] = await paired(modes[mode]);
    }
    for (let i = 0; i < ROUNDS; i++) {
      console.log(`round ${i + 1} of ${ROUNDS}: ${Object.keys(modes).join(', ')}…`);
      const round: Record<string, Record<string, number>> = {};
      for (const [mode, env] of Object.entries(modes)) round[mode] = await measure(env);
      rounds.push(round);
    }
  } finally {
    await receiver.close();
  }
  const costOver = (mode: string) =>
    Object.fromEntries(
      Object.keys(FIGURES).map((name) => {
        const differences = rounds.map((r) => r[mode][name] - r.off[name]);
        return [name, { per_round: differences.map(round2), median: percentiles(differences).p50 }];
      }),
    );
  const results = {
    paired: pairedCosts,
    by_process: {
      rounds,
      cost_on_over_off_ms: costOver('on'),
      cost_stored_over_off_ms: costOver('stored'),
    },
    target_ms: TARGET_MS,
    within_target: Object.values(pairedCosts.on).every((call) => call.cost_per_call_ms.p50 <= TARGET_MS),
    receiver: receiver.taken(),
  };
  console.log(JSON.stringify(results, null, 2));
  await writeFormatted(OUT, JSON.stringify(results, null, 2));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
