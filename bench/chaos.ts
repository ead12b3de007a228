/**
 * `npm run chaos`: durability under what production does, measured. The server runs split as in
 * production (one API process, two worker processes) on a Temporal dev server and PostgreSQL; agents
 * run CHAOS_RUNS runs of six kinds (sandboxed calls, idempotent or not; MCP calls, idempotent or not;
 * messages to other agents, waited for; client-tool pauses answered later) while the workers are
 * stopped at random moments, by SIGTERM (a deploy: they drain for SHUTDOWN_GRACE_MS) or by kill -9
 * (a crash), one after the other, and started again. Then it checks what must hold:
 *
 * - lost: none. Every run it started ends, and every paused run's answer ends its turn.
 * - stuck: none. Each ends within CHAOS_RUN_DEADLINE_MS of being sent.
 * - false "cancelled": none. Nobody cancels anything here, so no run and no tool return says cancelled.
 * - every re-run accounted for. Each tool counts its own starts (the sandboxed tool in its agent's
 *   archival memory, through the injected client; the MCP server by the call's `_meta` key), and no
 *   call starts more often than once plus the takeovers of its claim (src/db/tool-claims.ts).
 * - no other error. A tool's return is its own, or the honest answer of a takeover that did not run it
 *   again (ToolCallInterrupted); nothing else changes because a process stopped.
 *
 * Needs PostgreSQL at DATABASE_URL (scripts/setup-postgres.sh), the Temporal CLI and bubblewrap, as the
 * tests do; writes bench/chaos.json (CHAOS_OUT) and exits 1 when anything above does not hold. With
 * CHAOS_TEMPORAL=production it runs on Temporal's production server on PostgreSQL instead of a dev
 * server (scripts/temporal-production.sh, started or joined) and writes bench/chaos-production.json.
 */
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Letta, { APIConnectionError, APIError } from '@letta-ai/letta-client';
import pg from 'pg';
import { projectRoot } from '../src/paths';
import type { ChatRequest, OpenAiStub } from '../test/helpers/openai-stub';
import type { StubReply } from '../test/helpers/model-stub';
import {
  apiUrl,
  killProcess,
  serverProcessEnv,
  startApiProcess,
  startWorkerProcess,
} from '../test/helpers/server-processes';
import type { StartedProcess } from '../test/helpers/process';
import { writeFormatted } from './report';
import { numberSetting } from './stats';
import { startInfra, type Infra } from './infra';

/** The Temporal server it runs on (CHAOS_TEMPORAL): a dev server of its own, or the production server. */
const TEMPORAL = process.env.CHAOS_TEMPORAL === 'production' ? 'production' : 'dev';

/** Where the figures go (CHAOS_OUT). */
const OUT = path.resolve(
  projectRoot,
  process.env.CHAOS_OUT ?? (TEMPORAL === 'production' ? 'bench/chaos-production.json' : 'bench/chaos.json'),
);

const SETTINGS = {
  runs: numberSetting('CHAOS_RUNS', 1000),
  /** Agents of each kind, each running its runs one after the other. */
  agentsPerKind: numberSetting('CHAOS_AGENTS_PER_KIND', 6),
  /** How long a tool call waits, at most (each draws between a tenth of it and all of it). */
  callMs: numberSetting('CHAOS_CALL_MS', 6000),
  /** A fault every so often: between these. */
  faultMinMs: numberSetting('CHAOS_FAULT_MIN_MS', 2000),
  faultMaxMs: numberSetting('CHAOS_FAULT_MAX_MS', 6000),
  /** How long a stopping worker lets its calls finish: shorter than the longest call, so some are cut. */
  graceMs: numberSetting('CHAOS_GRACE_MS', 3000),
  /** The share of a worker's faults that are kill -9 (a crash); the others are SIGTERM (a deploy). */
  killShare: numberSetting('CHAOS_KILL_SHARE', 0.5),
  heartbeatTimeoutMs: numberSetting('CHAOS_HEARTBEAT_TIMEOUT_MS', 5000),
  /** A run that has not ended this long after it was sent is stuck. */
  runDeadlineMs: numberSetting('CHAOS_RUN_DEADLINE_MS', 600_000),
  /** Every so many faults, the API is stopped (SIGTERM: a deploy) instead of a worker. */
  apiEvery: numberSetting('CHAOS_API_EVERY', 5),
  seed: numberSetting('CHAOS_SEED', Date.now() % 1_000_000),
};

/** A small PRNG (mulberry32), so a run can be repeated with CHAOS_SEED. */
function randomFrom(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = randomFrom(SETTINGS.seed);
const between = (min: number, max: number) => Math.round(min + random() * (max - min));

type Kind = 'sandbox' | 'sandbox_idempotent' | 'mcp_write' | 'mcp_read' | 'agent_message' | 'paused';
const KINDS: Kind[] = ['sandbox', 'sandbox_idempotent', 'mcp_write', 'mcp_read', 'agent_message', 'paused'];

/** What a chaos turn asks the model stub for, in its user message. */
interface Script {
  tool: string;
  args: Record<string, unknown>;
}
const SCRIPT = /^CHAOS(\{.*\})$/;
const REPLY = /CHAOSREPLY after (\d+) ms/;

/**
 * The stub follows the script in the turn's last user message: the script's call, then `done` once its
 * result came; a recipient of an agent message answers after the delay the message asks for.
 */
function scriptedModel(stub: OpenAiStub) {
  stub.setDefault((request: ChatRequest): StubReply => {
    const lastUser = request.messages.map((m) => m.role).lastIndexOf('user');
    const text = String(request.messages[lastUser]?.content ?? '');
    const script = SCRIPT.exec(text);
    const reply = !script && REPLY.exec(text);
    if (reply) return { text: 'replied', delayMs: Number(reply[1]) };
    const answered = request.messages.slice(lastUser).some((m) => m.role === 'tool');
    if (!script || answered) return { text: 'done' };
    const { tool, args } = JSON.parse(script[1]) as Script;
    return { toolCalls: [{ name: tool, arguments: args }] };
  });
}

/** The sandboxed tool: it notes each start in its agent's archival memory, by the call's id. */
const sleeperSource = (name: string) =>
  [
    'import os',
    'import time',
    '',
    `def ${name}(ms: int) -> str:`,
    '    """Sleeps, then says so.',
    '',
    '    Args:',
    '        ms: How long, in milliseconds.',
    '    """',
    '    client.agents.passages.create(agent_id=os.environ["LETTA_AGENT_ID"], text="start " + os.environ["LETTA_TOOL_CALL_ID"])',
    '    time.sleep(ms / 1000)',
    '    return "slept " + str(ms)',
    '',
  ].join('\n');

const CLIENT_TOOL = {
  name: 'chaos_client',
  description: 'Does something on the client.',
  parameters: { type: 'object', properties: { ms: { type: 'integer' } }, required: ['ms'] },
};

/** The API and the two workers, started again after each fault. */
class Cluster {
  api!: StartedProcess;
  workers: StartedProcess[] = [];
  faults = { worker_sigterm: 0, worker_sigkill: 0, api_sigterm: 0 };
  constructor(readonly env: Record<string, string>) {}

  async start() {
    this.api = await startApiProcess(this.env);
    this.workers = await Promise.all([0, 1].map(() => startWorkerProcess(this.env)));
  }

  /** Stops worker `i` as a deploy or a crash would, and starts it again after a moment. */
  async faultWorker(i: number) {
    const signal = random() < SETTINGS.killShare ? 'SIGKILL' : 'SIGTERM';
    await killProcess(this.workers[i], signal);
    this.faults[signal === 'SIGTERM' ? 'worker_sigterm' : 'worker_sigkill']++;
    await sleep(between(500, 3000));
    this.workers[i] = await startWorkerProcess(this.env);
  }

  /** Deploys the API again: it refuses new turns while it stops, and its clients retry. */
  async faultApi() {
    await killProcess(this.api, 'SIGTERM');
    this.faults.api_sigterm++;
    this.api = await startApiProcess(this.env);
  }

  async stop() {
    for (const proc of [...this.workers, this.api]) await killProcess(proc, 'SIGTERM');
  }
}

/** Faults at random moments, one process after the other (a rolling restart), until stopped. */
function faultLoop(cluster: Cluster) {
  let running = true;
  const done = (async () => {
    for (let n = 1; running; n++) {
      await sleep(between(SETTINGS.faultMinMs, SETTINGS.faultMaxMs));
      if (!running) return;
      if (n % SETTINGS.apiEvery === 0) await cluster.faultApi();
      else await cluster.faultWorker(n % 2);
    }
  })();
  // A process that cannot start again ends the faults; stop() reports it, after the runs, and the
  // cluster is stopped before the bench fails rather than left running by an unhandled rejection.
  done.catch(() => undefined);
  return {
    async stop() {
      running = false;
      await done;
    },
  };
}

/**
 * A request the API refused while it stopped (503) or that never reached it (connection refused), sent
 * again: it was not taken, so sending it again cannot make a second run.
 */
async function resent<T>(send: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await send();
    } catch (error) {
      const notTaken =
        error instanceof APIConnectionError || (error instanceof APIError && error.status === 503);
      if (!notTaken || tries >= 120) throw error;
      await sleep(500);
    }
  }
}

interface Agents {
  byKind: Map<Kind, string[]>;
  recipients: string[];
}

async function setUp(client: Letta, baseUrl: string, mcp: Infra['mcp']): Promise<Agents> {
  // Every sandboxed tool gets the official client, which the sleeper notes its starts with.
  const configured = await fetch(`${baseUrl}/v1/sandbox-config/local`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ pip_requirements: [{ name: 'letta-client' }] }),
  });
  if (!configured.ok) throw new Error(`sandbox config: ${configured.status} ${await configured.text()}`);
  const sleeper = await client.tools.upsert({ source_code: sleeperSource('chaos_sleep') });
  const idempotent = await client.tools.upsert({
    source_code: sleeperSource('chaos_sleep_idempotent'),
    metadata_: { idempotent: true },
  } as never);
  const server = await client.mcpServers.create({
    server_name: 'chaos',
    config: { mcp_server_type: 'streamable_http', server_url: mcp.url },
  } as never);
  const mcpTools = await client.mcpServers.tools.list((server as { id: string }).id);
  const mcpTool = (name: string) =>
    (mcpTools as { id: string; name: string }[]).find((t) => t.name === name)!.id;
  const toolsOf: Record<Kind, string[]> = {
    sandbox: [sleeper.id],
    sandbox_idempotent: [idempotent.id],
    mcp_write: [mcpTool('slow_write')],
    mcp_read: [mcpTool('slow_read')],
    agent_message: [],
    paused: [],
  };
  const agent = (kind: Kind | 'recipient', i: number) =>
    client.agents.create({
      name: `chaos-${kind}-${i}`,
      model: 'openai/gpt-4o-mini',
      embedding: 'openai/text-embedding-3-small',
      tool_ids: toolsOf[kind as Kind] ?? [],
      ...(kind === 'agent_message' ? { tools: ['send_message_to_agent_and_wait_for_reply'] } : {}),
      include_base_tools: false,
    } as never);
  const n = SETTINGS.agentsPerKind;
  const byKind = new Map<Kind, string[]>();
  for (const kind of KINDS)
    byKind.set(
      kind,
      (await Promise.all(Array.from({ length: n }, (_, i) => agent(kind, i)))).map((a) => a.id),
    );
  const recipients = (await Promise.all(Array.from({ length: n }, (_, i) => agent('recipient', i)))).map(
    (a) => a.id,
  );
  return { byKind, recipients };
}

/** The script of one run of `kind`. */
function scriptFor(kind: Kind, agents: Agents): Script {
  const ms = between(SETTINGS.callMs / 10, SETTINGS.callMs);
  switch (kind) {
    case 'sandbox':
      return { tool: 'chaos_sleep', args: { ms } };
    case 'sandbox_idempotent':
      return { tool: 'chaos_sleep_idempotent', args: { ms } };
    case 'mcp_write':
      return { tool: 'slow_write', args: { ms } };
    case 'mcp_read':
      return { tool: 'slow_read', args: { ms } };
    case 'agent_message': {
      const other = agents.recipients[between(0, agents.recipients.length - 1)];
      const message = `CHAOSREPLY after ${between(100, SETTINGS.callMs / 2)} ms`;
      return { tool: 'send_message_to_agent_and_wait_for_reply', args: { message, other_agent_id: other } };
    }
    case 'paused':
      return { tool: CLIENT_TOOL.name, args: { ms } };
  }
}

interface RunOutcome {
  kind: Kind;
  agentId: string;
  /** The run of the message, and the run of the answer to its pause. */
  runIds: string[];
  /** How each run ended: its status and stop reason, or `stuck`. */
  endings: string[];
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** Waits for run `id` to end; `stuck` past the deadline. */
async function ending(client: Letta, id: string, deadline: number): Promise<string> {
  while (Date.now() < deadline) {
    const run = (await client.runs.retrieve(id).catch(() => undefined)) as
      { status: string; stop_reason?: string | null } | undefined;
    if (run && TERMINAL.has(run.status)) return `${run.status}/${run.stop_reason ?? ''}`;
    await sleep(500);
  }
  return 'stuck';
}

/** One run of `kind` on `agentId`: sent in the background, followed to its end, its pause answered. */
async function oneRun(client: Letta, agents: Agents, kind: Kind, agentId: string): Promise<RunOutcome> {
  const content = `CHAOS${JSON.stringify(scriptFor(kind, agents))}`;
  const deadline = () => Date.now() + SETTINGS.runDeadlineMs;
  const first = await resent(() =>
    client.agents.messages.createAsync(agentId, {
      messages: [{ role: 'user', content }],
      ...(kind === 'paused' ? { client_tools: [CLIENT_TOOL] } : {}),
    } as never),
  );
  const outcome: RunOutcome = { kind, agentId, runIds: [first.id], endings: [] };
  outcome.endings.push(await ending(client, first.id, deadline()));
  if (kind !== 'paused' || !outcome.endings[0].endsWith('requires_approval')) return outcome;
  await sleep(between(200, 5000)); // a person, or a client, takes a moment
  const messages = await resent(() => client.runs.messages.list(first.id));
  const request = (
    messages.getPaginatedItems() as { message_type: string; tool_call?: { tool_call_id: string } }[]
  ).find((m) => m.message_type === 'approval_request_message');
  const answer = await resent(() =>
    client.agents.messages.createAsync(agentId, {
      messages: [
        {
          type: 'approval',
          approvals: [
            {
              type: 'tool',
              tool_call_id: request!.tool_call!.tool_call_id,
              tool_return: 'did it',
              status: 'success',
            },
          ],
        },
      ],
      client_tools: [CLIENT_TOOL],
    } as never),
  );
  outcome.runIds.push(answer.id);
  outcome.endings.push(await ending(client, answer.id, deadline()));
  return outcome;
}

/** CHAOS_RUNS runs, as many of each kind, spread over its agents; each agent's one after the other. */
async function drive(client: Letta, agents: Agents): Promise<RunOutcome[]> {
  const outcomes: RunOutcome[] = [];
  const lanes = KINDS.flatMap((kind) => agents.byKind.get(kind)!.map((agentId) => ({ kind, agentId })));
  await Promise.all(
    lanes.map(async ({ kind, agentId }, i) => {
      const quota = Math.floor(SETTINGS.runs / lanes.length) + (i < SETTINGS.runs % lanes.length ? 1 : 0);
      for (let n = 0; n < quota; n++) {
        outcomes.push(await oneRun(client, agents, kind, agentId));
        if (outcomes.length % 50 === 0) console.log(`chaos: ${outcomes.length} runs ended`);
      }
    }),
  );
  return outcomes;
}

/** A tool return as the checks read it. */
interface Return {
  kind: Kind;
  callId: string;
  status: string;
  text: string;
}

async function returnsOf(client: Letta, outcomes: RunOutcome[]): Promise<Return[]> {
  const returns: Return[] = [];
  for (const { kind, runIds } of outcomes)
    for (const runId of runIds) {
      const page = await client.runs.messages.list(runId);
      for (const m of page.getPaginatedItems() as {
        message_type: string;
        tool_call_id?: string;
        status?: string;
        tool_return?: unknown;
      }[])
        if (m.message_type === 'tool_return_message')
          returns.push({
            kind,
            callId: m.tool_call_id!,
            status: m.status ?? '',
            text: typeof m.tool_return === 'string' ? m.tool_return : JSON.stringify(m.tool_return),
          });
    }
  return returns;
}

/** Starts of the sandboxed calls, as the tool noted them in its agents' archival memory. */
async function sandboxStarts(client: Letta, agents: Agents): Promise<Map<string, number>> {
  const starts = new Map<string, number>();
  for (const kind of ['sandbox', 'sandbox_idempotent'] as Kind[])
    for (const agentId of agents.byKind.get(kind)!)
      for await (const { text } of passagesOf(client, agentId)) {
        const callId = /^start (\S+)$/.exec(text)?.[1];
        if (callId) starts.set(callId, (starts.get(callId) ?? 0) + 1);
      }
  return starts;
}

/** Every passage of an agent's archival memory, a page at a time. */
async function* passagesOf(client: Letta, agentId: string) {
  for (let after: string | undefined; ;) {
    const page = (await client.agents.passages.list(agentId, { limit: 1000, after })) as {
      id: string;
      text: string;
    }[];
    yield* page;
    if (page.length < 1000) return;
    after = page.at(-1)!.id;
  }
}

/** The takeovers of each call's claim, from the server's database. */
async function takeovers(databaseUrl: string): Promise<Map<string, number>> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ tool_call_id: string; takeovers: number }>(
      `SELECT tool_call_id, takeovers FROM tool_call_claims WHERE takeovers > 0`,
    );
    return new Map(rows.map((row) => [row.tool_call_id, row.takeovers]));
  } finally {
    await db.end();
  }
}

/** The answer of a takeover that did not run its tool again (activities/tool-call.ts interruptedText). */
const INTERRUPTED = /ToolCallInterrupted/;

function verdict(
  outcomes: RunOutcome[],
  returns: Return[],
  starts: Map<string, number>,
  taken: Map<string, number>,
) {
  const endings = outcomes.flatMap((o) => o.endings);
  const expected = (o: RunOutcome) =>
    o.kind === 'paused' ? ['completed/requires_approval', 'completed/end_turn'] : ['completed/end_turn'];
  const lost = outcomes.filter(
    (o) => o.endings.join() !== expected(o).join() && !o.endings.includes('stuck'),
  );
  const unaccounted = returns.filter((r) => (starts.get(r.callId) ?? 0) > 1 + (taken.get(r.callId) ?? 0));
  const counted = returns.filter((r) => r.kind !== 'agent_message' && r.kind !== 'paused');
  return {
    runs: outcomes.length,
    runs_by_kind: Object.fromEntries(KINDS.map((k) => [k, outcomes.filter((o) => o.kind === k).length])),
    lost: lost.length,
    stuck: endings.filter((e) => e === 'stuck').length,
    false_cancelled:
      endings.filter((e) => e.includes('cancelled')).length +
      returns.filter((r) => /cancel/i.test(r.text)).length,
    tool_returns: {
      own: returns.filter((r) => r.status === 'success').length,
      interrupted_by_kind: Object.fromEntries(
        KINDS.map((k) => [k, returns.filter((r) => r.kind === k && INTERRUPTED.test(r.text)).length]),
      ),
      interrupted: returns.filter((r) => r.status === 'error' && INTERRUPTED.test(r.text)).length,
      other_errors: returns.filter((r) => r.status === 'error' && !INTERRUPTED.test(r.text)).length,
    },
    takeovers: [...taken.values()].reduce((a, b) => a + b, 0),
    extra_starts: counted.reduce((sum, r) => sum + Math.max(0, (starts.get(r.callId) ?? 0) - 1), 0),
    unaccounted_reruns: unaccounted.length,
    examples: {
      lost: lost.slice(0, 5),
      other_errors: returns.filter((r) => r.status === 'error' && !INTERRUPTED.test(r.text)).slice(0, 5),
      unaccounted: unaccounted.slice(0, 5),
    },
  };
}

async function main() {
  const began = Date.now();
  const infra = await startInfra('chaos', TEMPORAL);
  scriptedModel(infra.stub);
  const env = await serverProcessEnv({
    dataDir: infra.dataDir,
    databaseUrl: infra.schema.url,
    temporalAddress: infra.temporal.address,
    openAiBaseUrl: infra.stub.baseURL,
    extra: {
      SHUTDOWN_GRACE_MS: String(SETTINGS.graceMs),
      ACTIVITY_HEARTBEAT_TIMEOUT_MS: String(SETTINGS.heartbeatTimeoutMs),
      AGENT_MESSAGE_TIMEOUT_MS: '600000',
    },
  });
  env.LETTA_PUBLIC_URL = apiUrl(env);
  const cluster = new Cluster(env);
  let result: Record<string, unknown> = {};
  try {
    await cluster.start();
    const client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 5 });
    const agents = await setUp(client, apiUrl(env), infra.mcp);
    console.log(`chaos: ${SETTINGS.runs} runs, seed ${SETTINGS.seed}`);
    const faults = faultLoop(cluster);
    const outcomes = await drive(client, agents);
    await faults.stop();
    const returns = await returnsOf(client, outcomes);
    const starts = await sandboxStarts(client, agents);
    for (const { callId } of infra.mcp.calls)
      if (typeof callId === 'string') starts.set(callId, (starts.get(callId) ?? 0) + 1);
    const figures = verdict(outcomes, returns, starts, await takeovers(infra.schema.url));
    result = {
      date: new Date().toISOString().slice(0, 10),
      temporal: TEMPORAL,
      settings: SETTINGS,
      faults: cluster.faults,
      seconds: Math.round((Date.now() - began) / 1000),
      ...figures,
      mcp_calls_without_key: infra.mcp.calls.filter((call) => typeof call.callId !== 'string').length,
    };
  } finally {
    await cluster.stop().catch(() => undefined);
    await infra.stop();
  }
  const text = JSON.stringify(result, null, 2);
  await writeFormatted(OUT, text);
  console.log(text);
  const otherErrors = (result.tool_returns as { other_errors?: number } | undefined)?.other_errors;
  const held =
    ['lost', 'stuck', 'false_cancelled', 'unaccounted_reruns'].every((key) => result[key] === 0) &&
    otherErrors === 0;
  process.exitCode = held ? 0 : 1;
}

void main();
