/**
 * `npm run bench:scale-out`: the server split as a scaled-out deployment runs it, two API processes
 * (`--role=api`) and three worker processes (`--role=worker`) on one PostgreSQL and one Temporal server,
 * with the OpenAI model stub answering at once; once on a Temporal dev server (SQLite, one history shard)
 * and once on Temporal's production server (PostgreSQL persistence and SQL visibility:
 * scripts/temporal-production.sh, started or joined). SCALE_OUT_TEMPORAL=dev or =production runs one.
 * Then the server as `npm start` runs it, one process (`--role=all`) on the dev server, once on
 * PostgreSQL and once on the embedded PGlite (SCALE_OUT_ONE_PROCESS=postgres or =pglite runs one; none
 * with an empty value): what one process does, and what PGlite costs it.
 *
 * Per Temporal server, three phases, each agent's turns one after the other and the agents all at once,
 * half of them through each API: plain steps (one model call, no tool), turns of sandboxed tool calls
 * and turns of MCP tool calls (streamable HTTP), every tool call a regular activity. Figures: steps or
 * tool calls per second, in all and through each API; p50/p95 of a turn's time as its client sees it;
 * the CPU of each process over the phase (its own and its children's, in percent of one core), of the
 * Temporal server and of PostgreSQL. Writes bench/scale-out.json (SCALE_OUT_OUT).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { projectRoot } from '../src/paths';
import { freePort } from '../test/helpers/env';
import type { ChatRequest, OpenAiStub } from '../test/helpers/openai-stub';
import type { StubReply } from '../test/helpers/model-stub';
import { descendantsOf, type StartedProcess } from '../test/helpers/process';
import * as serverProcesses from '../test/helpers/server-processes';
import { inParallel, numberSetting, percentiles } from './stats';
import { writeFormatted } from './report';
import { startInfra, type TemporalKind } from './infra';
import type { DatabaseKind } from './paused-runs';

const SETTINGS = {
  apis: 2,
  workers: 3,
  /** Agents of each phase, half of them created and driven through each API. */
  agents: numberSetting('SCALE_OUT_AGENTS', 8),
  /** Plain turns per agent, one after the other. */
  plainTurns: numberSetting('SCALE_OUT_PLAIN_TURNS', 10),
  /** Tool-calling turns per agent, and the calls in each (in one model reply, run one after the other). */
  toolTurns: numberSetting('SCALE_OUT_TOOL_TURNS', 2),
  callsPerTurn: numberSetting('SCALE_OUT_CALLS_PER_TURN', 5),
};
/** How the server is deployed for one run of the phases: split (SETTINGS' APIs and workers) or one process. */
interface Deployment {
  temporal: TemporalKind;
  split: boolean;
  database: DatabaseKind;
}
const listSetting = (name: string, fallback: string) =>
  (process.env[name] ?? fallback).split(',').filter(Boolean);
const DEPLOYMENTS: Record<string, Deployment> = Object.fromEntries([
  ...listSetting('SCALE_OUT_TEMPORAL', 'dev,production').map((temporal) => [
    temporal,
    { temporal: temporal as TemporalKind, split: true, database: 'postgres' },
  ]),
  ...listSetting('SCALE_OUT_ONE_PROCESS', 'postgres,pglite').map((database) => [
    `one_process_${database}`,
    { temporal: 'dev', split: false, database: database as DatabaseKind },
  ]),
]);
const OUT = path.resolve(projectRoot, process.env.SCALE_OUT_OUT ?? 'bench/scale-out.json');

const PING_TOOL =
  'def ping(n: int) -> int:\n    """Returns n.\n\n    Args:\n        n: a number\n    """\n    return n\n';

/** What a turn asks the stub for: `calls` calls of `tool` in one reply, then an answer. */
interface Script {
  tool?: string;
  calls: number;
  args?: Record<string, unknown>;
}
const SCRIPT = /^SCALE(\{.*\})$/;

function scriptedModel(stub: OpenAiStub) {
  stub.setDefault((request: ChatRequest): StubReply => {
    const lastUser = request.messages.map((m) => m.role).lastIndexOf('user');
    const script = SCRIPT.exec(String(request.messages[lastUser]?.content ?? ''));
    const answered = request.messages.slice(lastUser).some((m) => m.role === 'tool');
    if (!script || answered) return { text: 'done' };
    const { tool, calls, args } = JSON.parse(script[1]) as Script;
    if (!tool || calls === 0) return { text: 'done' };
    return { toolCalls: Array.from({ length: calls }, () => ({ name: tool, arguments: args ?? {} })) };
  });
}

/** CPU time of a process and of its descendants, living and reaped, in milliseconds. */
function treeCpuMs(pid: number): number {
  return [pid, ...descendantsOf(pid)].reduce((total, each) => total + statCpuMs(each), 0);
}

/** utime + stime + cutime + cstime of /proc/<pid>/stat (fields 14-17), in clock ticks of 10 ms. */
function statCpuMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ticks = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .slice(11, 15)
      .map(Number);
    return ticks.reduce((sum, t) => sum + t, 0) * 10;
  } catch {
    return 0; // gone meanwhile
  }
}

/** The PostgreSQL server's processes: its backends come and go with the pools. */
const postgresPids = () =>
  fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    })
    .map(Number);

interface Cluster {
  apis: { process: StartedProcess; client: Letta }[];
  workers: StartedProcess[];
  temporalPid: number;
}

/** The CPU each process takes while `work` runs, in percent of one core. */
async function withCpu<T>(cluster: Cluster, work: () => Promise<T>) {
  const named: [string, () => number][] = [
    ...cluster.apis.map((api, i): [string, () => number] => [
      `api_${i + 1}`,
      () => treeCpuMs(api.process.child.pid!),
    ]),
    ...cluster.workers.map((w, i): [string, () => number] => [
      `worker_${i + 1}`,
      () => treeCpuMs(w.child.pid!),
    ]),
    ['temporal_server', () => treeCpuMs(cluster.temporalPid)],
    ['postgres', () => postgresPids().reduce((sum, pid) => sum + statCpuMs(pid), 0)],
  ];
  const before = named.map(([, read]) => read());
  const started = performance.now();
  const result = await work();
  const ms = performance.now() - started;
  const cpu = Object.fromEntries(
    named.map(([name, read], i) => [name, Math.round(((read() - before[i]) / ms) * 100)]),
  );
  return { result, ms, cpu_percent_of_one_core: cpu };
}

const newAgent = async (client: Letta, toolIds: string[]) =>
  (
    await client.agents.create({
      model: 'openai/gpt-4o-mini',
      tool_ids: toolIds,
      include_base_tools: false,
      parallel_tool_calls: true, // so that a reply's calls are all kept, as Letta does
    } as never)
  ).id;

/** One turn following `script`, which must end with `end_turn`; its time in milliseconds. */
async function turn(client: Letta, agentId: string, script: Script): Promise<number> {
  const started = performance.now();
  const response = await client.agents.messages.create(agentId, {
    messages: [{ role: 'user', content: `SCALE${JSON.stringify(script)}` }],
  });
  if (response.stop_reason.stop_reason !== 'end_turn')
    throw new Error(`turn ended with ${response.stop_reason.stop_reason}`);
  return performance.now() - started;
}

/**
 * A phase: SETTINGS.agents agents with `toolIds`, agent i through API i mod 2, one untimed turn each
 * (caches, a worker's sandbox pool), then `turns` timed turns each, all agents at once.
 */
async function phase(cluster: Cluster, toolIds: string[], script: Script, turns: number) {
  const through = (i: number) => cluster.apis[i % cluster.apis.length].client;
  const agents = await Promise.all(
    Array.from({ length: SETTINGS.agents }, (_, i) => newAgent(through(i), toolIds)),
  );
  await inParallel(agents.length, agents.length, (i) => turn(through(i), agents[i], script));
  const measured = await withCpu(cluster, () =>
    inParallel(agents.length, agents.length, async (i) => {
      const times: number[] = [];
      for (let n = 0; n < turns; n++) times.push(await turn(through(i), agents[i], script));
      return times;
    }),
  );
  const seconds = measured.ms / 1000;
  const units = Math.max(1, script.calls); // a plain turn is one step; a tool turn, its calls
  const perApi = cluster.apis.map((_, a) =>
    measured.result.filter((_, i) => i % cluster.apis.length === a).flat(),
  );
  return {
    turns: measured.result.flat().length,
    seconds: Math.round(seconds * 100) / 100,
    per_second: Math.round((measured.result.flat().length * units) / seconds),
    per_second_by_api: perApi.map((times) => Math.round((times.length * units) / seconds)),
    turn_ms: percentiles(measured.result.flat()),
    cpu_percent_of_one_core: measured.cpu_percent_of_one_core,
  };
}

/** The three phases on one deployment. */
async function onDeployment({ temporal: which, split, database }: Deployment) {
  const { dataDir, temporal, schema, stub, mcp, stop } = await startInfra('scale-out', which);
  scriptedModel(stub);
  const env = await serverProcesses.serverProcessEnv({
    dataDir,
    databaseUrl: database === 'postgres' ? schema.url : undefined,
    temporalAddress: temporal.address,
    openAiBaseUrl: stub.baseURL,
  });
  const cluster: Cluster = { apis: [], workers: [], temporalPid: temporal.pid };
  try {
    for (let i = 0; i < (split ? SETTINGS.apis : 1); i++) {
      const apiEnv = i === 0 ? env : { ...env, PORT: String(await freePort()) };
      const started = await serverProcesses.startApiProcess(apiEnv, split ? 'api' : 'all');
      cluster.apis.push({
        process: started,
        client: new Letta({ baseURL: serverProcesses.apiUrl(apiEnv), apiKey: 'unused' }),
      });
    }
    if (split)
      cluster.workers = await Promise.all(
        Array.from({ length: SETTINGS.workers }, () => serverProcesses.startWorkerProcess(env)),
      );
    const { client } = cluster.apis[0];
    const ping = await client.tools.create({ source_code: PING_TOOL });
    const server = await client.mcpServers.create({
      server_name: 'scale-out',
      config: { mcp_server_type: 'streamable_http', server_url: mcp.url },
    } as never);
    const tools = (await client.mcpServers.tools.list((server as { id: string }).id)) as {
      id: string;
      name: string;
    }[];
    const slowRead = tools.find((t) => t.name === 'slow_read')!.id;
    const calls = SETTINGS.callsPerTurn;
    console.log(
      `scale-out: ${which} Temporal at ${temporal.address}, ${split ? 'split' : 'one process'}, ${database}`,
    );
    return {
      deployment: { temporal: which, split, database },
      load_average_at_start: loadAverage(),
      plain_steps: await phase(cluster, [], { calls: 0 }, SETTINGS.plainTurns),
      sandboxed_calls: await phase(
        cluster,
        [ping.id],
        { tool: 'ping', calls, args: { n: 1 } },
        SETTINGS.toolTurns,
      ),
      mcp_calls: await phase(
        cluster,
        [slowRead],
        { tool: 'slow_read', calls, args: { ms: 0 } },
        SETTINGS.toolTurns,
      ),
    };
  } finally {
    for (const proc of [...cluster.workers, ...cluster.apis.map((api) => api.process)])
      await serverProcesses.killProcess(proc, 'SIGTERM').catch(() => undefined);
    await stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The machine's load (1, 5 and 15 minutes): the cores are shared, and the figures say how busy they were. */
const loadAverage = () => os.loadavg().map((load) => Math.round(load * 100) / 100);

async function main() {
  const results: Record<string, unknown> = {};
  for (const [name, deployment] of Object.entries(DEPLOYMENTS))
    results[name] = await onDeployment(deployment);
  const report = {
    date: new Date().toISOString().slice(0, 10),
    machine: {
      cores: os.cpus().length,
      cpu: os.cpus()[0]?.model,
      load_average_at_end: loadAverage(),
    },
    settings: SETTINGS,
    ...results,
  };
  await writeFormatted(OUT, JSON.stringify(report));
  console.log(JSON.stringify(report, null, 2));
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
