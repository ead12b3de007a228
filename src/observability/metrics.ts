/**
 * The server's own Prometheus metrics (prom-client), served on `/metrics` beside the Temporal SDK's
 * (src/observability/metrics-server.ts). Every label takes a bounded set of values: providers and
 * models, execution modes, registered tools and MCP servers, route templates, stop reasons. Agent, run
 * and conversation ids are never labels.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export const metricsRegistry = new Registry();

/** Model calls take seconds, up to minutes for long replies. */
const MODEL_SECONDS = [0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300];
/** Built-in tools take milliseconds, sandboxed and MCP ones up to their timeout. */
const TOOL_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180];
/** A run lasts from one model call to many steps with tools, and an approval's wait ends it. */
const RUN_SECONDS = [0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160, 320, 600, 1800];
/** An answer to a pause comes in seconds from a client, or hours to days from a person. */
const WAIT_SECONDS = [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 86400, 7 * 86400];
/** Most API requests take milliseconds; a blocking messages.create lasts its whole run. */
const HTTP_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

const registers = [metricsRegistry];

export const runsStarted = new Counter({
  name: 'letta_runs_started_total',
  help: 'Runs created: one per messages.create, and one per answer that resumes a paused turn',
  registers,
});

export const runsFinished = new Counter({
  name: 'letta_runs_finished_total',
  help: 'Runs ended, by stop reason (requires_approval: the run ended in a pause)',
  labelNames: ['stop_reason'],
  registers,
});

export const runDuration = new Histogram({
  name: 'letta_run_duration_seconds',
  help: 'From a run’s creation (its time queued included) to its end, by stop reason',
  labelNames: ['stop_reason'],
  buckets: RUN_SECONDS,
  registers,
});

export const modelCalls = new Counter({
  name: 'letta_model_calls_total',
  help: 'Calls to model providers, by provider, model and outcome (ok, cancelled, interrupted: its worker stopped past its grace, or Letta’s error type)',
  labelNames: ['provider', 'model', 'outcome'],
  registers,
});

export const modelCallDuration = new Histogram({
  name: 'letta_model_call_duration_seconds',
  help: 'Model call latency, streamed replies to their last token, by provider and model',
  labelNames: ['provider', 'model'],
  buckets: MODEL_SECONDS,
  registers,
});

export const modelTokens = new Counter({
  name: 'letta_model_tokens_total',
  help: 'Tokens of model calls, by provider, model and direction (input: the prompt; output: the reply)',
  labelNames: ['provider', 'model', 'direction'],
  registers,
});

export const toolCalls = new Counter({
  name: 'letta_tool_calls_total',
  help: 'Tool call attempts, by execution mode, tool and outcome (success, error: the tool’s; failure: the attempt’s, retried; paused)',
  labelNames: ['mode', 'tool', 'outcome'],
  registers,
});

export const toolCallTakeovers = new Counter({
  name: 'letta_tool_call_takeovers_total',
  help: 'Tool calls taken over from an attempt that started them and never recorded a result (its worker died, or stopped past its grace), by execution mode and what was done: rerun (the tool may run again), resumed (the earlier attempt’s MCP task followed on), refused (the model is told it may have run)',
  labelNames: ['mode', 'action'],
  registers,
});

export const toolCallDuration = new Histogram({
  name: 'letta_tool_call_duration_seconds',
  help: 'Tool call attempt latency, by execution mode and tool',
  labelNames: ['mode', 'tool'],
  buckets: TOOL_SECONDS,
  registers,
});

export const approvalWait = new Histogram({
  name: 'letta_approval_wait_seconds',
  help: 'From a pause’s start to its answer, by kind (approval, client_tool) and outcome (answered, expired, cancelled)',
  labelNames: ['kind', 'outcome'],
  buckets: WAIT_SECONDS,
  registers,
});

export const sandboxStartFailures = new Counter({
  name: 'letta_sandbox_start_failures_total',
  help: 'Sandbox runners that could not start',
  registers,
});

export const mcpConnectionFailures = new Counter({
  name: 'letta_mcp_connection_failures_total',
  help: 'MCP connection attempts that failed, by server id',
  labelNames: ['server'],
  registers,
});

export const httpRequests = new Counter({
  name: 'letta_http_requests_total',
  help: 'API requests, by method, route template and status',
  labelNames: ['method', 'route', 'status'],
  registers,
});

export const httpRequestDuration = new Histogram({
  name: 'letta_http_request_duration_seconds',
  help: 'API request latency to the response’s end, by method and route template',
  labelNames: ['method', 'route'],
  buckets: HTTP_SECONDS,
  registers,
});

/** Seconds since `startNs` (process.hrtime.bigint()). */
export const secondsSince = (startNs: bigint) => Number(process.hrtime.bigint() - startNs) / 1e9;

/** What a sandbox's warm pool holds now: its configured size, its runners started, those idle. */
export interface PoolState {
  size: number;
  runners: number;
  idle: number;
}

const pools = new Set<() => PoolState>();
const sumOf = (read: (state: PoolState) => number) =>
  [...pools].reduce((sum, state) => sum + read(state()), 0);

/** Reports a warm pool's state until the returned function is called (the pool closed). */
export function trackSandboxPool(state: () => PoolState): () => void {
  pools.add(state);
  return () => pools.delete(state);
}

new Gauge({
  name: 'letta_sandbox_pool_size',
  help: 'Runners the sandbox’s warm pools keep per environment (SANDBOX_WARM_POOL_SIZE)',
  registers,
  collect() {
    this.set(sumOf((state) => state.size));
  },
});

new Gauge({
  name: 'letta_sandbox_runners',
  help: 'Warm sandbox runners started, by state (idle, busy)',
  labelNames: ['state'],
  registers,
  collect() {
    const runners = sumOf((state) => state.runners);
    const idle = sumOf((state) => state.idle);
    this.set({ state: 'idle' }, idle);
    this.set({ state: 'busy' }, runners - idle);
  },
});

const mcpPools = new Set<() => string[]>();

/** Reports the servers an MCP client pool is connected to until the returned function is called. */
export function trackMcpPool(connectedServers: () => string[]): () => void {
  mcpPools.add(connectedServers);
  return () => mcpPools.delete(connectedServers);
}

new Gauge({
  name: 'letta_mcp_connections',
  help: 'Open MCP connections, by server id',
  labelNames: ['server'],
  registers,
  collect() {
    this.reset();
    for (const servers of mcpPools) for (const server of servers()) this.inc({ server });
  },
});

/** A run's end, by its stop reason, timed from its creation (unknown when its row is gone). */
export function observeRunEnd(stopReason: string, createdAt: Date | undefined): void {
  runsFinished.inc({ stop_reason: stopReason });
  if (createdAt) runDuration.observe({ stop_reason: stopReason }, (Date.now() - createdAt.getTime()) / 1000);
}

/** A pause's wait, from its start to its answer (or its expiry, or its cancel). */
export function observeApprovalWait(pause: { kind: string; outcome: string; requestedAt: string }): void {
  const seconds = Math.max(0, (Date.now() - Date.parse(pause.requestedAt)) / 1000);
  approvalWait.observe({ kind: pause.kind, outcome: pause.outcome }, seconds);
}
