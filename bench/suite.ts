/**
 * What durability costs, measured: `npm run bench`. The whole server runs in this process (as
 * `npm start` does) on a Temporal dev server and a PostgreSQL schema of its own, with a local
 * OpenAI-compatible stub answering instantly; each figure sits next to its baseline, measured in the
 * same run. Writes bench/results.json and bench/results.md.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { temporal } from '@temporalio/proto';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { startServer, type RunningServer, type ServerOptions } from '../src/server';
import { projectRoot } from '../src/paths';
import { connectMcp } from '../src/mcp/connection';
import { mcpStdioLauncher, mcpStdioOptions } from '../src/mcp/stdio-sandbox';
import { executeBuiltinTool } from '../src/tools/builtin';
import { providerRegistry } from '../src/llm';
import { NO_PRIVATE_ADDRESSES } from '../src/net/private-addresses';
import { getAgentRow } from '../src/db/agents';
import { getRun } from '../src/db/runs';
import { clientToolReturn } from '../test/helpers/approvals';
import { freePort, silentLogger, testConfig, uniqueSuffix } from '../test/helpers/env';
import { startOpenAiStub, type ChatRequest, type OpenAiStub } from '../test/helpers/openai-stub';
import type { ScriptedReply } from '../test/helpers/model-stub';
import { createTestSchema, type TestSchema } from '../test/helpers/postgres';
import type { StartedProcess } from '../test/helpers/process';
import { apiUrl, killProcess, serverProcessEnv, startApiProcess } from '../test/helpers/server-processes';
import { startTemporalServer } from '../test/helpers/temporal-server';
import type { RunningDevServer } from '../src/temporal/dev-server';
import {
  inParallel,
  measureInTurn,
  medianInterval,
  percentiles,
  perUnit,
  ratios,
  timed,
  timeInTurn,
  timePairs,
  timeRuns,
  WARMUP,
  type Percentiles,
} from './stats';
import { writeFormatted, writeReport } from './report';
import { baselineMultiples, checkQuick } from './baseline';
import { baselineActivities } from './baseline-activities';
import {
  activityCycles,
  eventMillis,
  historySize,
  perUnitOf,
  type ActivityCycle,
  type HistorySize,
} from './history';

/** `--quick`: few repetitions, no cold sandbox, no paused runs; compared with results.json, writes nothing. */
const QUICK = process.argv.includes('--quick');
const REPS = Number(process.env.BENCH_REPS ?? (QUICK ? 5 : 15));
const RESULTS_FILE = path.join(projectRoot, 'bench', 'results.json');
const recorded = () => JSON.parse(fs.readFileSync(RESULTS_FILE, 'utf8'));
const CALLS_PER_STEP = 10;
/**
 * The throughput figures' load: agents (or bare workflows) at once, each one turn of this many tool
 * calls (or activities); timed rounds of it after one untimed, each on new agents. One round lasts
 * about a second, and consecutive ones differed by up to a quarter (259–327 calls a second): the
 * median of several is the figure.
 */
const THROUGHPUT = { agents: 16, calls: 20, rounds: QUICK ? 3 : 7 };
/** BENCH_ONLY=name,name measures just those figures (and no paused runs unless named): for profiling. */
const ONLY = process.env.BENCH_ONLY?.split(',');
const EVERYTHING = path.join(
  projectRoot,
  'node_modules/@modelcontextprotocol/server-everything/dist/index.js',
);

/**
 * What a benchmark turn asks the stub for: `times` calls of `tool`, then an answer. The calls come in
 * one reply (the turn runs them one after the other: none of the tools measured is parallel-safe), or
 * with `perTurn` one per model reply, which adds a model call through the engine to each.
 */
interface Script {
  tool: string;
  times: number;
  args: Record<string, unknown>;
  perTurn?: boolean;
  /** How long the stub takes over its first reply. */
  delayMs?: number;
}
const scriptText = (script: Script) => `BENCH${JSON.stringify(script)}`;

/** The stub follows the script in the request's last user message; it notes when each request came. */
function scriptedStub(stub: OpenAiStub, arrivals: number[]) {
  stub.setDefault((request: ChatRequest) => {
    arrivals.push(performance.now());
    const lastUser = request.messages.map((m) => m.role).lastIndexOf('user');
    const match = /BENCH(\{.*\})/.exec(String(request.messages[lastUser]?.content ?? ''));
    if (!match) return { text: 'ok' };
    const script = JSON.parse(match[1]) as Script;
    const done = request.messages.slice(lastUser).filter((m) => m.role === 'tool').length;
    const reply = scriptedReply(script, done);
    return done === 0 && script.delayMs ? { ...reply, delayMs: script.delayMs } : reply;
  });
}

/** The reply to a turn following `script` that has had `done` tool results so far. */
function scriptedReply(script: Script, done: number): ScriptedReply {
  const call = { name: script.tool, arguments: script.args };
  if (!script.perTurn)
    return done === 0 && script.times ? { toolCalls: Array(script.times).fill(call) } : { text: 'done' };
  return done < script.times ? { toolCalls: [call] } : { text: 'done' };
}

interface Bench {
  stub: OpenAiStub;
  arrivals: number[];
  temporal: RunningDevServer;
  schema: TestSchema;
  server: RunningServer;
  client: Letta;
  /** A second server on the same Temporal and database whose sandbox has no warm pool (none when quick). */
  coldClient?: Letta;
  /** A third whose worker runs bench/workflows.ts, the bare-Temporal baseline, instead of ours. */
  bare: RunningServer;
  dataDir: string;
}

async function serverOn(
  bench: Pick<Bench, 'stub' | 'temporal' | 'schema' | 'dataDir'>,
  extra: Record<string, string>,
  options: ServerOptions = {},
) {
  const server = await startServer(
    testConfig({
      DATA_DIR: bench.dataDir,
      DATABASE_URL: bench.schema.url,
      TEMPORAL_ADDRESS: bench.temporal.address,
      TASK_QUEUE_PREFIX: `b-${uniqueSuffix()}-`,
      PORT: String(await freePort()),
      OPENAI_BASE_URL: bench.stub.baseURL,
      OPENAI_API_KEY: 'bench',
      // bench/observability.ts: /metrics served, as an operator who scrapes it runs the server.
      ...(process.env.BENCH_METRICS === '1' ? { METRICS_PORT: '0' } : {}),
      ...extra,
    }),
    silentLogger(),
    options,
  );
  return { server, client: new Letta({ baseURL: server.url!, apiKey: 'unused', maxRetries: 0 }) };
}

/** One agent turn following `script`, which must stop with `end_turn`; its run id. */
async function step(
  client: Letta,
  agentId: string,
  script: Script,
  headers: Record<string, string> = {},
): Promise<string> {
  const response = await client.agents.messages.create(
    agentId,
    { messages: [{ role: 'user', content: scriptText(script) }] },
    // The client's own timeout is a minute: a slow model call gets one beyond its delay.
    { headers, ...(script.delayMs ? { timeout: script.delayMs + 60_000 } : {}) },
  );
  if (response.stop_reason.stop_reason !== 'end_turn')
    throw new Error(`step ended with ${response.stop_reason.stop_reason}`);
  return response.messages[0].run_id!;
}

const newAgent = async (client: Letta, toolIds: string[] = [], tools: string[] = []) =>
  (
    await client.agents.create({
      model: 'openai/gpt-4o-mini',
      tool_ids: toolIds,
      tools,
      include_base_tools: false,
      parallel_tool_calls: true, // so that a reply's calls are all kept, as Letta does
      memory_blocks: [{ label: 'notes', value: '', limit: 1_000_000 }],
    })
  ).id;

/**
 * What a call is compared with, timed in the same rounds as the turns (`runs` samples after each
 * round's turns), so that a drift of the machine's speed, which on these VMs moves a figure by a
 * fifth within minutes, moves both alike: the direct call, a fresh interpreter, one more bare regular
 * activity. `sample` gives one run's milliseconds.
 */
interface InTurnBaseline {
  runs: number;
  sample: () => Promise<number>;
}

/** A baseline that is one run of `work`, timed. */
const timedBaseline = (runs: number, work: () => Promise<unknown>): InTurnBaseline => ({
  runs,
  sample: () => timed(work),
});

/**
 * The floor under a tool call through a regular activity: one more no-op regular activity on the bare
 * worker (a workflow of CALLS_PER_STEP + 1 of them against one of one, divided by CALLS_PER_STEP). With
 * `toolQueue`, on a tool mode's task queue, as a sandboxed or MCP call runs, rather than on the
 * workflow's own, whose activities the worker takes eagerly.
 */
const activityFloor = (bench: Bench, toolQueue = false): InTurnBaseline => ({
  runs: 2,
  sample: async () => {
    const queue = toolQueue ? [bench.bare.turns.taskQueues.mcp] : [];
    const more = await timed(() => runBare(bench, 'activitiesInTurn', [CALLS_PER_STEP + 1, false, ...queue]));
    const one = await timed(() => runBare(bench, 'activitiesInTurn', [1, false, ...queue]));
    return (more - one) / CALLS_PER_STEP;
  },
});

/** The floors a sandboxed or MCP call is compared with: on the workflow's task queue and on a tool's. */
const activityFloors = (bench: Bench) => ({
  activity_floor: activityFloor(bench),
  tool_queue_floor: activityFloor(bench, true),
});

/** Per-call samples, one a round, and each named baseline's mean in the same round. */
interface PerCallRounds {
  figures: Record<string, Percentiles | number>;
  perCall: number[];
  roundMeans: Record<string, number[]>;
}

const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

/**
 * The per-call cost of `tool`: turns of `calls` + 1 calls and of one call alternate, and each pair's
 * difference, divided by `calls`, is one sample. Both turns make the same model calls (two, when the
 * calls come in one reply), so the difference is the calls' alone. A turn without calls (one model
 * call) alternates with them, as earlier versions measured it (`step_without_calls_ms`). Each named
 * baseline is sampled after each round's turns, and each round's per-call sample is also taken over
 * the mean of that round's samples (`over_<name>_ms`, `over_<name>_ratio`).
 */
async function perCallRounds(
  client: Letta,
  agentId: string,
  script: Omit<Script, 'times'>,
  {
    calls = CALLS_PER_STEP,
    baselines = {},
  }: { calls?: number; baselines?: Record<string, InTurnBaseline> } = {},
): Promise<PerCallRounds> {
  const samples = Object.fromEntries(Object.keys(baselines).map((name): [string, number[][]] => [name, []]));
  const baselineRound = (name: string) => async () => {
    const round: number[] = [];
    for (let i = 0; i < baselines[name].runs; i++) round.push(await baselines[name].sample());
    samples[name].push(round);
  };
  const [withCalls, withOne, without] = await timeInTurn(REPS, [
    () => step(client, agentId, { ...script, times: calls + 1 }),
    () => step(client, agentId, { ...script, times: 1 }),
    () => step(client, agentId, { ...script, times: 0 }),
    ...Object.keys(baselines).map(baselineRound),
  ]);
  const perCall = perUnit({ a: withCalls, b: withOne }, calls);
  // The warm-up rounds' first.
  const timedRounds = Object.fromEntries(
    Object.entries(samples).map(([n, rounds]) => [n, rounds.slice(-REPS)]),
  );
  const roundMeans = Object.fromEntries(
    Object.entries(timedRounds).map(([n, rounds]) => [n, rounds.map(mean)]),
  );
  const overBaselines = Object.entries(roundMeans).flatMap(([name, means]) => [
    [`${name}_ms`, percentiles(timedRounds[name].flat())],
    [`over_${name}_ms`, percentiles(perCall.map((ms, i) => ms - means[i]))],
    [`over_${name}_ratio`, percentiles(perCall.map((ms, i) => ms / means[i]))],
  ]);
  return {
    figures: {
      calls_per_step: calls,
      step_with_calls_ms: percentiles(withCalls),
      step_with_one_call_ms: percentiles(withOne),
      step_without_calls_ms: percentiles(without),
      per_call_ms: percentiles(perCall),
      ...Object.fromEntries(overBaselines),
    },
    perCall,
    roundMeans,
  };
}

/** perCallRounds' figures alone. */
const perCallInStep = async (...args: Parameters<typeof perCallRounds>) =>
  (await perCallRounds(...args)).figures;

/** A workflow of bench/workflows.ts on the bare server's worker, to its end. */
function startBare(bench: Bench, workflow: 'oneActivity' | 'activitiesInTurn', args: unknown[] = []) {
  const { temporal, taskQueues } = bench.bare.turns;
  return temporal.workflow.start(workflow, {
    taskQueue: taskQueues.agent,
    workflowId: `bench-${workflow}-${uniqueSuffix()}`,
    args,
  });
}

const runBare = async (...args: Parameters<typeof startBare>) => (await startBare(...args)).result();

/** `round` once untimed, then THROUGHPUT.rounds times: what each timed round gave. */
async function inRounds<T>(round: () => Promise<T>): Promise<T[]> {
  await round();
  const results: T[] = [];
  for (let i = 0; i < THROUGHPUT.rounds; i++) results.push(await round());
  return results;
}

const median = (values: number[]) => percentiles(values).p50;

/**
 * Rounds of the throughput figure's load in bare workflows, each of its calls a no-op activity:
 * activities a second.
 */
async function bareThroughput(bench: Bench, asLocal: boolean) {
  const { agents, calls } = THROUGHPUT;
  const rates = await inRounds(async () => {
    const started = performance.now();
    await inParallel(agents, agents, () => runBare(bench, 'activitiesInTurn', [calls, asLocal]));
    return Math.round((agents * calls) / ((performance.now() - started) / 1000));
  });
  return { median: median(rates), rates };
}

/**
 * 0. Bare Temporal: a workflow of one no-op activity; what one more costs (a workflow of
 * CALLS_PER_STEP + 1 of them against one of one of the same kind, in pairs), as a regular and as a
 * local activity; and as many workflows at once as the throughput figure runs agents. The regular
 * activity is the floor under a model call and a sandboxed or MCP tool call, which run as regular
 * activities (those on a tool mode's task queue, which the workflow's worker cannot take eagerly:
 * `activity_on_tool_queue_ms`); the local one under a built-in call. The local ones pair with a workflow of one local
 * activity: against the one-activity workflow, each sample would also take off part of what a regular
 * activity costs over a local one, and swing with the regular activity's spread.
 */
async function bareTemporal(bench: Bench) {
  const perActivity = async (asLocal: boolean, ...queue: string[]) =>
    percentiles(
      perUnit(
        await timePairs(
          REPS,
          () => runBare(bench, 'activitiesInTurn', [CALLS_PER_STEP + 1, asLocal, ...queue]),
          () => runBare(bench, 'activitiesInTurn', [1, asLocal, ...queue]),
        ),
        CALLS_PER_STEP,
      ),
    );
  const regular = await bareThroughput(bench, false);
  const local = await bareThroughput(bench, true);
  return {
    one_activity_workflow_ms: percentiles(await timeRuns(REPS, () => runBare(bench, 'oneActivity'))),
    activity_ms: await perActivity(false),
    activity_on_tool_queue_ms: await perActivity(false, bench.bare.turns.taskQueues.mcp),
    local_activity_ms: await perActivity(true),
    activities_per_second: regular.median,
    local_activities_per_second: local.median,
    activities_per_second_by_round: regular.rates,
    local_activities_per_second_by_round: local.rates,
  };
}

/** A plain agent turn (one model call, no tools) and the one-activity workflow, in pairs. */
async function plainStep(bench: Bench) {
  const agentId = await newAgent(bench.client);
  const pairs = await timePairs(
    REPS,
    () => step(bench.client, agentId, { tool: 'none', times: 0, args: {} }),
    () => runBare(bench, 'oneActivity'),
  );
  return {
    step_ms: percentiles(pairs.a),
    one_activity_workflow_ms: percentiles(pairs.b),
    ratio: percentiles(ratios(pairs)),
  };
}

/** The trivial built-in call of the figures: memory_insert. */
const MEMORY_INSERT = { tool: 'memory_insert', args: { label: 'notes', new_str: 'x' } };

/** 1. A trivial built-in tool (memory_insert) through the engine, against calling it in-process. */
async function orchestrationOverhead(bench: Bench) {
  const agentId = await newAgent(bench.client, [], [MEMORY_INSERT.tool]);
  const { args } = MEMORY_INSERT;
  const agent = (await getAgentRow(bench.server.db, agentId))!;
  const direct = () =>
    bench.server.db.transaction((tx) =>
      executeBuiltinTool(
        {
          db: tx,
          agent,
          web: {
            policy: { timeoutMs: 1000, maxBytes: 1, maxRedirects: 0, allow: NO_PRIVATE_ADDRESSES },
            exa: { baseUrl: 'http://127.0.0.1:9', timeoutMs: 1000 },
          },
          providers: providerRegistry(testConfig({})),
        },
        'memory_insert',
        args,
      ),
    );
  const script = MEMORY_INSERT;
  const inOneReply = await perCallInStep(bench.client, agentId, script, {
    baselines: { baseline: timedBaseline(CALLS_PER_STEP, direct) },
  });
  return {
    direct_call_ms: inOneReply.baseline_ms,
    in_one_reply: inOneReply,
    one_per_model_turn: await perCallInStep(bench.client, agentId, { ...script, perTurn: true }),
  };
}

/** The trivial Python tool of the sandboxed figures. */
const PING_SOURCE =
  'def ping(n: int) -> int:\n    """Returns n.\n\n    Args:\n        n: a number\n    """\n    return n\n';

/** The ping tool, created once for every figure that calls it. */
const pingTool = (() => {
  let tool: ReturnType<Letta['tools']['create']> | undefined;
  return (bench: Bench) => (tool ??= bench.client.tools.create({ source_code: PING_SOURCE }));
})();

/**
 * 2. A trivial Python tool: warm pool and cold sandbox through the activity, and a fresh interpreter
 * per call. The sandbox's own work is a warm call over the floor of one more regular activity (the
 * activity the call runs in), each round against its own round's floor and fresh interpreter.
 */
async function sandboxedCalls(bench: Bench) {
  const tool = await pingTool(bench);
  const source = PING_SOURCE;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-tool-'));
  const file = path.join(dir, 'tool.py');
  const freshInterpreter = async () => {
    fs.writeFileSync(file, `${source}\nimport json\nprint(json.dumps(ping(1)))\n`);
    execFileSync('/usr/bin/python3', [file]);
  };
  const measure = async (client: Letta, options: Parameters<typeof perCallRounds>[3]) =>
    perCallRounds(client, await newAgent(client, [tool.id]), { tool: 'ping', args: { n: 1 } }, options);
  try {
    const warm = await measure(bench.client, {
      baselines: { baseline: timedBaseline(3, freshInterpreter), ...activityFloors(bench) },
    });
    const { baseline: fresh, activity_floor: floor, tool_queue_floor: queueFloor } = warm.roundMeans;
    const ownWork = warm.perCall.map((ms, i) => ms - floor[i]);
    return {
      warm_pool: warm.figures,
      own_work_ms: percentiles(ownWork),
      own_work_over_tool_queue_floor_ms: percentiles(warm.perCall.map((ms, i) => ms - queueFloor[i])),
      own_work_over_fresh_interpreter_ratio: percentiles(ownWork.map((ms, i) => ms / fresh[i])),
      // Half the calls: at ~170 ms each, ten a turn made this the suite's slowest figure but one.
      ...(bench.coldClient && {
        cold_sandbox: (await measure(bench.coldClient, { calls: CALLS_PER_STEP / 2 })).figures,
      }),
      fresh_interpreter_per_call_ms: warm.figures.baseline_ms,
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The MCP transports measured: server-everything over stdio and over streamable HTTP. */
type McpTransport = 'stdio' | 'streamable_http';
type McpConfig = Parameters<typeof connectMcp>[0];

/**
 * Runs `work` for each transport with server-everything registered over it and, on each of `clients`
 * (servers on the same database), an agent whose one tool is its echo; what each gave, by transport.
 */
async function withMcpEcho(
  bench: Bench,
  work: (agentIds: string[], config: McpConfig) => Promise<unknown>,
  clients = [bench.client],
): Promise<Record<McpTransport, unknown>> {
  const http = execHttpEverything();
  try {
    const configs = {
      stdio: { mcp_server_type: 'stdio' as const, command: process.execPath, args: [EVERYTHING, 'stdio'] },
      streamable_http: { mcp_server_type: 'streamable_http' as const, server_url: await http.url },
    };
    const out: Partial<Record<McpTransport, unknown>> = {};
    for (const [transport, config] of Object.entries(configs)) {
      const server = await clients[0].mcpServers.create({ server_name: `bench-${transport}`, config });
      const echo = (await clients[0].mcpServers.tools.list(server.id!)).find((t) => t.name === 'echo')!;
      const agentIds = await Promise.all(clients.map((client) => newAgent(client, [echo.id!])));
      out[transport as McpTransport] = await work(agentIds, config);
      await clients[0].mcpServers.delete(server.id!);
    }
    return out as Record<McpTransport, unknown>;
  } finally {
    http.stop();
  }
}

const ECHO = { tool: 'echo', args: { message: 'hi' } };

/**
 * 3. server-everything's echo through the engine, against the floor of one more regular activity (the
 * activity the call runs in) and straight from the SDK in this process.
 */
const mcpCalls = (bench: Bench) =>
  withMcpEcho(bench, async ([agentId], config) => {
    // Started as the engine starts it (MCP_STDIO's default, the sandbox).
    const stdio = mcpStdioLauncher(mcpStdioOptions(testConfig({})));
    const sdk: McpClient = await connectMcp(config, { connectMs: 10_000, listMs: 10_000 }, stdio);
    const engine = await perCallInStep(bench.client, agentId, ECHO, {
      baselines: {
        baseline: timedBaseline(CALLS_PER_STEP, () => sdk.callTool({ name: 'echo', arguments: ECHO.args })),
        ...activityFloors(bench),
      },
    });
    await sdk.close();
    return { engine, direct_sdk_call_ms: engine.baseline_ms };
  });

/** server-everything over streamable HTTP on a free port; `url` resolves once it listens. */
function execHttpEverything() {
  let child: ChildProcess | undefined;
  const url = freePort().then(
    (port) =>
      new Promise<string>((resolve, reject) => {
        child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
          env: { PATH: process.env.PATH ?? '', PORT: String(port) },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        child.stderr!.on(
          'data',
          (chunk: Buffer) =>
            /listening|running/i.test(String(chunk)) && resolve(`http://127.0.0.1:${port}/mcp`),
        );
        child.on('exit', (code) => reject(new Error(`server-everything exited (${code})`)));
      }),
  );
  return { url, stop: () => child?.kill('SIGKILL') };
}

/** 4. An approval's answer: from its POST to the next model request, and to the POST's response. */
async function approvalRoundTrip(bench: Bench) {
  const clientTool = {
    name: 'ask_user',
    description: 'Asks the user',
    parameters: { type: 'object', properties: {} },
  };
  const toModel: number[] = [];
  const toResponse: number[] = [];
  for (let i = 0; i < REPS + 3; i++) {
    const agentId = await newAgent(bench.client);
    const paused = await bench.client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: scriptText({ tool: 'ask_user', times: 1, args: {} }) }],
      client_tools: [clientTool],
    });
    const call = paused.messages.find((m) => m.message_type === 'approval_request_message') as {
      tool_call: { tool_call_id: string };
    };
    const asked = bench.arrivals.length;
    const started = performance.now();
    await bench.client.agents.messages.create(agentId, {
      messages: [clientToolReturn(call.tool_call.tool_call_id, 'yes')],
    });
    if (i < 3) continue; // warm-up
    toResponse.push(performance.now() - started);
    toModel.push(bench.arrivals[asked] - started);
  }
  return {
    post_to_next_model_request_ms: percentiles(toModel),
    post_to_response_ms: percentiles(toResponse),
  };
}

const cpuMs = (pid: number) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in clock ticks of 10 ms
};

/** The CPU all PostgreSQL server processes have used (its backends come and go with the pool). */
const postgresCpuMs = () =>
  fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .reduce((total, pid) => {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        return stat.includes('(postgres)') ? total + cpuMs(Number(pid)) : total;
      } catch {
        return total; // gone meanwhile
      }
    }, 0);

/**
 * 5. K agents at once, each a turn of M tool calls, in rounds: tool calls per second (the rounds'
 * median, and each round's), and the CPU the timed rounds took.
 */
async function throughput(bench: Bench) {
  const { agents, calls, rounds } = THROUGHPUT;
  const round = async (perTurn: boolean) => {
    const ids = await Promise.all(
      Array.from({ length: agents }, () => newAgent(bench.client, [], ['memory_insert'])),
    );
    const script = { tool: 'memory_insert', times: calls, args: { label: 'notes', new_str: 'x' }, perTurn };
    const cpu = { ours: process.cpuUsage(), temporal: cpuMs(bench.temporal.pid), postgres: postgresCpuMs() };
    const started = performance.now();
    await inParallel(agents, agents, (i) => step(bench.client, ids[i], script));
    const ours = process.cpuUsage(cpu.ours);
    return {
      ms: performance.now() - started,
      ourCpuMs: (ours.user + ours.system) / 1000,
      temporalCpuMs: cpuMs(bench.temporal.pid) - cpu.temporal,
      postgresCpuMs: postgresCpuMs() - cpu.postgres,
    };
  };
  const measure = async (perTurn: boolean) => {
    const timed = await inRounds(() => round(perTurn));
    const total = (field: keyof (typeof timed)[number]) => timed.reduce((sum, r) => sum + r[field], 0);
    const percent = (cpuMs: number) => Math.round((cpuMs / total('ms')) * 100);
    const rates = timed.map((r) => Math.round((agents * calls) / (r.ms / 1000)));
    return {
      seconds: Math.round(total('ms') / 10) / 100,
      tool_calls_per_second: median(rates),
      tool_calls_per_second_by_round: rates,
      server_process_cpu_percent: percent(total('ourCpuMs')),
      temporal_server_cpu_percent: percent(total('temporalCpuMs')),
      postgres_cpu_percent: percent(total('postgresCpuMs')),
    };
  };
  return {
    agents,
    calls_per_agent: calls,
    rounds,
    in_one_reply: await measure(false),
    one_per_model_turn: await measure(true),
  };
}

/** A turn's workflow history, once the turn has ended. */
async function turnHistory(bench: Bench, runId: string) {
  const run = await getRun(bench.server.db, runId);
  const handle = bench.server.turns.temporal.workflow.getHandle(run!.workflow_id);
  await handle.result();
  return handle.fetchHistory();
}

/** A turn's history once its workflow has ended: events, encoded bytes, billable actions. */
async function stepHistory(bench: Bench, runId: string): Promise<HistorySize> {
  return historySize((await turnHistory(bench, runId)).events ?? []);
}

/** Each field's median over `sizes`. */
const medianSize = (sizes: HistorySize[]): HistorySize => ({
  events: median(sizes.map((s) => s.events)),
  bytes: median(sizes.map((s) => s.bytes)),
  billable_actions: median(sizes.map((s) => s.billable_actions)),
});

/** Runs a history sample this many times; the figure is each field's median. */
const HISTORY_SAMPLES = 3;

/** A tool call's share of a turn's history: a turn of CALLS_PER_STEP + 1 calls over one of one. */
async function historyPerCall(bench: Bench, agentId: string, script: Omit<Script, 'times'>) {
  const sizes: HistorySize[] = [];
  for (let i = 0; i < HISTORY_SAMPLES; i++) {
    const more = await stepHistory(
      bench,
      await step(bench.client, agentId, { ...script, times: CALLS_PER_STEP + 1 }),
    );
    const one = await stepHistory(bench, await step(bench.client, agentId, { ...script, times: 1 }));
    sizes.push(perUnitOf(more, one, CALLS_PER_STEP));
  }
  return medianSize(sizes);
}

const PLAIN: Script = { tool: 'none', times: 0, args: {} };

/**
 * 6. What Temporal stores and bills: the history of a plain turn, and what a tool call adds to it, a
 * built-in one (a local activity) and a sandboxed one (a regular activity).
 */
async function historyPerStep(bench: Bench) {
  const plainAgent = await newAgent(bench.client);
  const plain: HistorySize[] = [];
  for (let i = 0; i < HISTORY_SAMPLES; i++)
    plain.push(await stepHistory(bench, await step(bench.client, plainAgent, PLAIN)));
  const builtinAgent = await newAgent(bench.client, [], ['memory_insert']);
  const sandboxAgent = await newAgent(bench.client, [(await pingTool(bench)).id]);
  return {
    plain_step: medianSize(plain),
    builtin_call: await historyPerCall(bench, builtinAgent, {
      tool: 'memory_insert',
      args: { label: 'notes', new_str: 'x' },
    }),
    sandboxed_call: await historyPerCall(bench, sandboxAgent, { tool: 'ping', args: { n: 1 } }),
  };
}

/** The slow model call's delay: a minute, or 5 s when quick, which keeps CI's quick bench short. */
const SLOW_MODEL_MS = QUICK ? 5_000 : 60_000;

/** 7. What a slow model call adds to a plain turn's history over an instant one. */
async function slowModelCallHistory(bench: Bench) {
  if (QUICK) console.log(`  (quick: the slow model call takes ${SLOW_MODEL_MS / 1000} s, not 60)`);
  const agentId = await newAgent(bench.client);
  const instant = await stepHistory(bench, await step(bench.client, agentId, PLAIN));
  const slow = await stepHistory(
    bench,
    await step(bench.client, agentId, { ...PLAIN, delayMs: SLOW_MODEL_MS }),
  );
  return {
    model_delay_ms: SLOW_MODEL_MS,
    instant_step: instant,
    slow_step: slow,
    added_events: slow.events - instant.events,
  };
}

/** bench/paused-runs.ts in a process of its own: its API and worker processes start from a clean slate. */
function pausedRunsInChildProcess(counts: string[]) {
  return figuresOfChild('paused-runs.js', counts);
}

/** bench/`script` run in a child process with `args`: the figures it writes to BENCH_OUT. */
function figuresOfChild(script: string, args: string[]) {
  const out = path.join(os.tmpdir(), `bench-${path.basename(script, '.js')}-${process.pid}.json`);
  execFileSync(process.execPath, [path.join(__dirname, script), ...args], {
    env: { ...process.env, BENCH_OUT: out },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const results = JSON.parse(fs.readFileSync(out, 'utf8'));
  fs.rmSync(out);
  return results;
}

/** Where the servers' calls run, as they start with no override: the defaults the figures are of. */
function defaults() {
  const config = testConfig({});
  return {
    local_tool_calls: config.LOCAL_TOOL_CALLS,
    local_model_calls: config.LOCAL_MODEL_CALLS,
    step_task_timeout_ms: config.STEP_TASK_TIMEOUT_MS ?? null,
  };
}

function machine() {
  return {
    cores: os.cpus().length,
    cpu: os.cpus()[0]?.model,
    memory_gib: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    date: new Date().toISOString().slice(0, 10),
  };
}

/** Rounds of the tracing cost figure: its difference is a fraction of a millisecond. */
const TRACING_REPS = Number(process.env.BENCH_TRACING_REPS ?? 100);

/**
 * Calls in each of its turns: the more, the less a turn's own noise weighs on a call. The turn's own
 * spans (its request, workflow and model calls) are counted against its calls, so the figure errs high.
 */
const TRACING_CALLS = Number(process.env.BENCH_TRACING_CALLS ?? 30);

/** A W3C trace context of a new trace, sampled or not: the default sampler follows the caller's. */
const traceparent = (sampled: boolean) =>
  `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-0${sampled ? 1 : 0}`;

/** How long `work` took and the CPU time this process (all its threads) spent meanwhile, in ms. */
async function timedWithCpu(work: () => Promise<unknown>): Promise<{ ms: number; cpuMs: number }> {
  const cpu = process.cpuUsage();
  const ms = await timed(work);
  const { user, system } = process.cpuUsage(cpu);
  return { ms, cpuMs: (user + system) / 1000 };
}

/**
 * A tool call traced over one not: turns of TRACING_CALLS calls that come with a sampled trace context
 * (every span made, stored and exported as the process is configured) alternate with the same turns
 * whose context is not sampled (no span recorded anywhere: HTTP, workflows, activities, calls); each
 * pair's difference over its calls. Beside the time, the CPU time of this process (the server, its
 * worker and workflow threads), which varies less from turn to turn than the time does.
 */
async function tracedOverUntraced(client: Letta, agentId: string, script: Omit<Script, 'times'>) {
  const turn = (sampled: boolean) => () =>
    step(client, agentId, { ...script, times: TRACING_CALLS }, { traceparent: traceparent(sampled) });
  // Each turn from an empty transcript: the same context either way, and no transcript growing over
  // thousands of calls.
  const fromEmpty = async (work: () => Promise<unknown>) => {
    await client.agents.messages.reset(agentId, { add_default_initial_messages: false });
    return timedWithCpu(work);
  };
  const [traced, untraced] = await measureInTurn(TRACING_REPS, [turn(true), turn(false)], fromEmpty);
  return costPerCall({ traced, untraced });
}

type TimeAndCpu = { ms: number; cpuMs: number };

/** Turns of TRACING_CALLS calls, traced and not, in pairs: what tracing added to each call, in time and CPU. */
function costPerCall({ traced, untraced }: { traced: TimeAndCpu[]; untraced: TimeAndCpu[] }) {
  const figures = (of: keyof TimeAndCpu) => {
    const cost = perUnit({ a: traced.map((s) => s[of]), b: untraced.map((s) => s[of]) }, TRACING_CALLS);
    return {
      traced_turn: percentiles(traced.map((s) => s[of])),
      untraced_turn: percentiles(untraced.map((s) => s[of])),
      cost_per_call: percentiles(cost),
      cost_p50_interval_95: medianInterval(cost),
    };
  };
  return { calls_per_turn: TRACING_CALLS, time_ms: figures('ms'), cpu_ms: figures('cpuMs') };
}

/** A server process as `npm start` runs it (`--role=all`), its client, and an agent of its own. */
interface ServerSide {
  client: Letta;
  pid: number;
  agentId?: string;
}

/**
 * The same turn on two server processes, tracing on and off, in pairs whose order alternates: the
 * on side's cost per call over the off side's, in time and in each process's CPU.
 */
async function onOverOff(sides: { on: ServerSide; off: ServerSide }, script: Omit<Script, 'times'>) {
  const turn = async (side: ServerSide): Promise<TimeAndCpu> => {
    await side.client.agents.messages.reset(side.agentId!, { add_default_initial_messages: false });
    const cpu = cpuMs(side.pid);
    const ms = await timed(() => step(side.client, side.agentId!, { ...script, times: TRACING_CALLS }));
    return { ms, cpuMs: cpuMs(side.pid) - cpu };
  };
  for (let i = 0; i < WARMUP; i++) for (const side of [sides.on, sides.off]) await turn(side);
  const on: TimeAndCpu[] = [];
  const off: TimeAndCpu[] = [];
  for (let i = 0; i < TRACING_REPS; i++) {
    if (i % 2) on.push(await turn(sides.on));
    off.push(await turn(sides.off));
    if (!(i % 2)) on.push(await turn(sides.on));
  }
  return costPerCall({ traced: on, untraced: off });
}

/**
 * What tracing costs with everything counted, the tracer's mere presence included: two server
 * processes as `npm start` runs them on the suite's Temporal server, database and model stub, one with
 * OTEL_SDK_DISABLED=true and one exporting its spans over OTLP to BENCH_OTLP_ENDPOINT (bench/
 * observability.ts's receiver) with /metrics served; the same turns on each, in pairs.
 */
async function tracingOnOverOff(bench: Bench) {
  const endpoint = process.env.BENCH_OTLP_ENDPOINT;
  if (!endpoint)
    throw new Error('tracing_on_over_off needs BENCH_OTLP_ENDPOINT: run it through bench:observability');
  const start = async (extra: Record<string, string>): Promise<ServerSide & { process: StartedProcess }> => {
    const env = await serverProcessEnv({
      dataDir: bench.dataDir,
      databaseUrl: bench.schema.url,
      temporalAddress: bench.temporal.address,
      openAiBaseUrl: bench.stub.baseURL,
      extra: { LOG_LEVEL: 'warn', ...extra },
    });
    const started = await startApiProcess(env, 'all');
    return {
      process: started,
      pid: started.child.pid!,
      client: new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 }),
    };
  };
  const off = await start({ OTEL_SDK_DISABLED: 'true' });
  const on = await start({
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_BSP_SCHEDULE_DELAY: '200',
    METRICS_PORT: '0',
  });
  try {
    const agentOf = (side: ServerSide) => newAgent(side.client, [], [MEMORY_INSERT.tool]);
    const builtin = await onOverOff(
      { on: { ...on, agentId: await agentOf(on) }, off: { ...off, agentId: await agentOf(off) } },
      MEMORY_INSERT,
    );
    const mcp = await withMcpEcho(
      bench,
      ([onAgent, offAgent]) =>
        onOverOff({ on: { ...on, agentId: onAgent }, off: { ...off, agentId: offAgent } }, ECHO),
      [on.client, off.client],
    );
    return { builtin, mcp };
  } finally {
    await Promise.all([on, off].map((side) => killProcess(side.process, 'SIGTERM')));
  }
}

/**
 * The workflow side of a traced call alone: a traced and an untraced turn of CALLS_PER_STEP built-in
 * calls, replayed in turn by bench/replay-tracing.ts in a process of its own, per call.
 */
async function tracedReplayOverUntraced(bench: Bench, agentId: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-replay-'));
  const historyFile = async (sampled: boolean) => {
    const script = { ...MEMORY_INSERT, times: CALLS_PER_STEP };
    const runId = await step(bench.client, agentId, script, { traceparent: traceparent(sampled) });
    const file = path.join(dir, `${sampled ? 'traced' : 'untraced'}.binpb`);
    fs.writeFileSync(file, temporal.api.history.v1.History.encode(await turnHistory(bench, runId)).finish());
    return file;
  };
  try {
    const files = [await historyFile(true), await historyFile(false)];
    return figuresOfChild('replay-tracing.js', [...files, String(CALLS_PER_STEP), String(TRACING_REPS)]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What tracing costs a built-in and an MCP call, paired in one process (bench/observability.ts runs it
 * with spans stored only and with an exporter too): not among the suite's figures unless named in
 * BENCH_ONLY.
 */
async function tracingCost(bench: Bench) {
  const agentId = await newAgent(bench.client, [], [MEMORY_INSERT.tool]);
  return {
    builtin: await tracedOverUntraced(bench.client, agentId, MEMORY_INSERT),
    workflow_replay: await tracedReplayOverUntraced(bench, agentId),
    mcp: await withMcpEcho(bench, ([echoAgentId]) => tracedOverUntraced(bench.client, echoAgentId, ECHO)),
  };
}

/** Each phase's p50 over `cycles` (bench/history.ts's activityCycles). */
const phasePercentiles = (cycles: ActivityCycle[]) =>
  Object.fromEntries(
    (Object.keys(cycles[0]) as (keyof ActivityCycle)[]).map((phase) => [
      phase,
      percentiles(cycles.map((c) => c[phase])),
    ]),
  );

/** The cycles of the bare workflow of `count` no-op activities (bench/workflows.ts), once it ended. */
async function bareCycles(bench: Bench, count: number): Promise<ActivityCycle[]> {
  const handle = await startBare(bench, 'activitiesInTurn', [count, false]);
  await handle.result();
  return activityCycles((await handle.fetchHistory()).events ?? [], 'noop');
}

/**
 * Where a call's time goes by its turn's history (bench/history.ts's activityCycles): REPS turns of
 * CALLS_PER_STEP + 1 calls, each after a bare workflow of as many no-op activities, whose cycles are
 * the baseline; and per call, what the turn spends outside the cycles (a turn of one call's the
 * baseline) and what the request spends outside the workflow.
 */
async function callPhasesOf(
  bench: Bench,
  agentId: string,
  script: Omit<Script, 'times'>,
  activityType: string,
) {
  const times = CALLS_PER_STEP + 1;
  const cycles: ActivityCycle[] = [];
  const bare: ActivityCycle[] = [];
  const outside: Record<'workflow' | 'request', number>[] = [];
  const turn = async (calls: number) => {
    let runId = '';
    const ms = await timed(
      async () => (runId = await step(bench.client, agentId, { ...script, times: calls })),
    );
    const events = (await turnHistory(bench, runId)).events ?? [];
    return {
      ms,
      workflow: eventMillis(events.at(-1)!) - eventMillis(events[0]),
      cycles: activityCycles(events, activityType),
    };
  };
  const sum = (list: ActivityCycle[]) =>
    list.reduce((total, c) => total + Object.values(c).reduce((a, b) => a + b, 0), 0);
  for (let i = 0; i < WARMUP + REPS; i++) {
    const bareRun = await bareCycles(bench, times);
    const more = await turn(times);
    const one = await turn(1);
    if (i < WARMUP) continue;
    bare.push(...bareRun);
    cycles.push(...more.cycles);
    outside.push({
      workflow: (more.workflow - one.workflow - sum(more.cycles)) / CALLS_PER_STEP,
      request: (more.ms - more.workflow - (one.ms - one.workflow)) / CALLS_PER_STEP,
    });
  }
  return {
    call: phasePercentiles(cycles),
    bare_activity: phasePercentiles(bare),
    rest_of_turn_per_call_ms: percentiles(outside.map((o) => o.workflow)),
    rest_of_request_per_call_ms: percentiles(outside.map((o) => o.request)),
  };
}

/**
 * Where a sandboxed call's and an MCP call's time goes, by their turns' histories (callPhasesOf). Not
 * among the suite's figures unless named in BENCH_ONLY.
 */
async function callPhases(bench: Bench) {
  const sandboxAgent = await newAgent(bench.client, [(await pingTool(bench)).id]);
  return {
    sandboxed_call: await callPhasesOf(
      bench,
      sandboxAgent,
      { tool: 'ping', args: { n: 1 } },
      'runSandboxTool',
    ),
    mcp_call: await withMcpEcho(bench, ([agentId]) => callPhasesOf(bench, agentId, ECHO, 'runMcpTool')),
  };
}

/** Figures measured only when BENCH_ONLY names them. */
const NAMED_FIGURES: [string, (bench: Bench) => Promise<unknown>][] = [
  ['tracing_cost', tracingCost],
  ['tracing_on_over_off', tracingOnOverOff],
  ['call_phases', callPhases],
];

/** The figures measured, in order: the paused runs, slow, come last and run in a process of their own. */
const FIGURES: [string, (bench: Bench) => Promise<unknown>][] = [
  ['bare_temporal', bareTemporal],
  ['plain_agent_step', plainStep],
  ['orchestration_overhead', orchestrationOverhead],
  ['sandboxed_tool_call', sandboxedCalls],
  ['mcp_tool_call', mcpCalls],
  ['approval_round_trip', approvalRoundTrip],
  ['throughput', throughput],
  ['history_per_step', historyPerStep],
  ['slow_model_call_history', slowModelCallHistory],
];

/** Starts what the figures run on; `stop` undoes it. */
async function startBench(dataDir: string): Promise<Bench & { stop(): Promise<void> }> {
  const arrivals: number[] = [];
  const stub = await startOpenAiStub();
  scriptedStub(stub, arrivals);
  const { server: temporal } = await startTemporalServer(dataDir);
  const schema = await createTestSchema();
  const base = { stub, temporal, schema, dataDir };
  const warm = await serverOn(base, {});
  const cold = QUICK ? undefined : await serverOn(base, { SANDBOX_WARM_POOL_SIZE: '0' });
  const bare = await serverOn(
    base,
    {},
    { workflowsPath: require.resolve('./workflows'), activities: baselineActivities },
  );
  return {
    ...base,
    arrivals,
    server: warm.server,
    client: warm.client,
    coldClient: cold?.client,
    bare: bare.server,
    async stop() {
      for (const server of [bare.server, cold?.server, warm.server]) await server?.stop();
      await temporal.stop();
      await stub.close();
      await schema.drop();
    },
  };
}

async function main() {
  const began = Date.now();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-bench-'));
  const bench = await startBench(dataDir);
  const results: Record<string, unknown> = {
    machine: machine(),
    method: {
      repetitions: REPS,
      warm_up_runs: WARMUP,
      throughput_rounds: THROUGHPUT.rounds,
      quick: QUICK,
      defaults: defaults(),
    },
  };
  /** Seconds each part of the run took (start-up included), so a run over its budget says where. */
  const took: Record<string, number> = {};
  const lap = (() => {
    let last = began;
    return (part: string) => {
      took[part] = Math.round((Date.now() - last) / 1000);
      last = Date.now();
    };
  })();
  lap('start_up');
  try {
    const measured = ONLY ? [...FIGURES, ...NAMED_FIGURES].filter(([name]) => ONLY.includes(name)) : FIGURES;
    for (const [name, measure] of measured) {
      console.log(`measuring ${name}…`);
      results[name] = await measure(bench);
      lap(name);
    }
  } finally {
    await bench.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  lap('shut_down');
  if (!QUICK && (!ONLY || ONLY.includes('paused_runs_at_rest'))) {
    console.log('measuring paused runs at rest…');
    results.paused_runs_at_rest = pausedRunsInChildProcess(
      (process.env.BENCH_PAUSED ?? '1000,10000').split(','),
    );
    lap('paused_runs_at_rest');
  }
  if (!QUICK && (!ONLY || ONLY.includes('streaming'))) {
    console.log('measuring streaming…');
    // bench/streaming.ts in a process of its own, on a server process of its own; not when quick.
    results.streaming = figuresOfChild('streaming.js', []);
    lap('streaming');
  }
  results.seconds = Math.round((Date.now() - began) / 1000);
  results.seconds_by_part = took;
  if (!ONLY) results.baseline = baselineMultiples(results);
  console.log(JSON.stringify(results, null, 2));
  if (QUICK) process.exit(checkQuick(results, recorded()) ? 0 : 1);
  if (ONLY) process.exit(0);
  await writeFormatted(RESULTS_FILE, JSON.stringify(results, null, 2));
  await writeReport(results);
  process.exit(0);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
