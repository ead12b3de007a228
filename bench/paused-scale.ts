/**
 * Many turns paused on one machine (issue 68): `count` turns paused on approvals (a built-in tool that
 * requires approval, so the inbox `GET /v1/approvals/` lists them), spread over `agents` agents, each
 * agent's turns in conversations of their own, created as fast as the server takes them; then what they
 * cost and how the server does with all of them waiting:
 *
 *   npm run bench:paused-scale -- [count] [agents]     (defaults 100000 and 10000; needs PostgreSQL)
 *
 * - the rate of pauses, and where the creating time goes (CPU seconds of the server, Temporal and the
 *   bench; PostgreSQL has the rest);
 * - the server's memory after a full collection and Temporal's resident memory;
 * - the disk of both databases, and what it and Temporal's memory grew by over the pauses (this
 *   schema's tables or PGlite's folder; the dev server's SQLite file or the production server's
 *   databases);
 * - the inbox's first page and a deep one (a cursor 95% down the list), p50 and p95;
 * - answering a random paused turn (the blocking round trip until its next stop), at `BASELINE`
 *   paused and at `count`;
 * - a restart with all of them paused: the stop (SIGTERM), the start until healthy, and until the
 *   first answer's turn ends;
 * - `AT_ONCE` answered at once: until every one of their turns ends.
 *
 * The server is `npm start`'s shape (bench/paused-runs.ts's startMeasuredServer), on a Temporal dev
 * server of its own and PostgreSQL unless PAUSED_SCALE_TEMPORAL=production (Temporal's production
 * server: scripts/temporal-production.sh, started or joined) or PAUSED_SCALE_DATABASE=pglite (the
 * embedded database). The results go to bench/paused-scale.json (BENCH_OUT names another file).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { apiUrl, killProcess } from '../test/helpers/server-processes';
import { testDatabaseUrl } from '../test/helpers/env';
import { CONCURRENCY, jsonClient, startMeasuredServer, type DatabaseKind } from './paused-runs';
import type { TemporalKind } from './infra';
import { writeFormatted } from './report';
import { inParallel, percentiles, timed } from './stats';

/** The count of paused turns the answer at `count` is compared with. */
const BASELINE = 1000;
/** Answers of random paused turns timed one after the other, at `BASELINE` and at `count`. */
const ANSWERS = 20;
/** Inbox pages timed, of each kind. */
const PAGES = 20;
const PAGE_SIZE = 50;
const AT_ONCE = 100;

const INSERT_CALL = {
  name: 'memory_insert',
  arguments: { label: 'human', new_string: 'A fact to keep.', insert_line: -1 },
};

/** One paused turn: its conversation (an agent's id names its default one), its approval request. */
interface Pause {
  conversation: string;
  requestId: string;
  callId: string;
}

interface Slot {
  agentId: string;
  /** Its agent's first: the agent's default conversation; else one of its own. */
  first: boolean;
}
type Api = ReturnType<typeof jsonClient>;

/** The CPU seconds a process has used so far (user and system, from /proc). */
function cpuSeconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // utime and stime, fields 14 and 15 of stat(5), in clock ticks (100 a second on Linux).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const rssMib = (pid: number) =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);

const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

/** The PostgreSQL database's size and this schema's tables (with their indexes and TOAST), largest first. */
async function postgresDisk(url: string, schema: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const [database] = (await client.query('SELECT pg_database_size(current_database()) AS bytes')).rows;
    const tables = (
      await client.query<{ name: string; bytes: string }>(
        `SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'
         ORDER BY 2 DESC`,
        [schema],
      )
    ).rows;
    return {
      database_mib: mib(Number(database.bytes)),
      schema_mib: mib(tables.reduce((sum, t) => sum + Number(t.bytes), 0)),
      largest_tables_mib: Object.fromEntries(tables.slice(0, 6).map((t) => [t.name, mib(Number(t.bytes))])),
    };
  } finally {
    await client.end();
  }
}

/** The bytes of the files under `dir` (a folder) whose names pass `keep`. */
function filesBytes(dir: string, keep: (name: string) => boolean = () => true): number {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && keep(entry.name))
    .reduce((sum, entry) => sum + fs.statSync(path.join(entry.parentPath, entry.name)).size, 0);
}

/** The server's database: this schema's tables, or PGlite's folder. */
async function databaseDisk(
  database: DatabaseKind,
  url: string | undefined,
  schema: string | undefined,
  dataDir: string,
) {
  if (database === 'pglite') return { mib: mib(filesBytes(path.join(dataDir, 'pgdata'))) };
  const disk = await postgresDisk(url!, schema!);
  return { mib: disk.schema_mib, ...disk };
}

/** The databases of Temporal's production server (scripts/temporal-production.sh), in bytes. */
async function productionTemporalBytes(): Promise<number> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT sum(pg_database_size(datname)) AS bytes FROM pg_database
       WHERE datname IN ('temporal', 'temporal_visibility')`,
    );
    return Number(rows[0].bytes);
  } finally {
    await client.end();
  }
}

/** Temporal's history store: the dev server's SQLite file and its log, or the production server's databases. */
const temporalStoreBytes = (temporal: TemporalKind, dataDir: string) =>
  temporal === 'production'
    ? productionTemporalBytes()
    : Promise.resolve(filesBytes(dataDir, (name) => name.startsWith('temporal.db')));

/** Which Temporal server and database the run measures (PAUSED_SCALE_TEMPORAL, PAUSED_SCALE_DATABASE). */
const STORES = {
  temporal: (process.env.PAUSED_SCALE_TEMPORAL === 'production' ? 'production' : 'dev') as TemporalKind,
  database: (process.env.PAUSED_SCALE_DATABASE === 'pglite' ? 'pglite' : 'postgres') as DatabaseKind,
};

/** The slot's conversation: its agent's default one (named by the agent's id), or a new one. */
const conversationOf = async (api: Api, slot: Slot) =>
  slot.first
    ? slot.agentId
    : ((await api.post(`/v1/conversations/?agent_id=${slot.agentId}`, {})).id as string);

/** A turn of the conversation, paused on its approval. */
async function pauseIn(api: Api, conversation: string): Promise<Pause> {
  const response = await api.post(`/v1/conversations/${conversation}/messages`, {
    messages: [{ role: 'user', content: 'Remember this.' }],
    streaming: false,
  });
  const request = (response.messages as { id: string; tool_call: { tool_call_id: string } }[]).at(-1)!;
  return { conversation, requestId: request.id, callId: request.tool_call.tool_call_id };
}

/** Approves the pause's call and waits for the turn's next stop. */
const answer = (api: Api, pause: Pause) =>
  api.post(`/v1/conversations/${pause.conversation}/messages`, {
    messages: [
      { type: 'approval', approvals: [{ type: 'approval', tool_call_id: pause.callId, approve: true }] },
    ],
    streaming: false,
  });

/** Takes a random pause out of `paused`. */
const takeRandom = (paused: Pause[]) => {
  const i = Math.floor(Math.random() * paused.length);
  const [pause] = paused.splice(i, 1);
  return pause;
};

export async function pausedScale(count: number, agentCount: number) {
  const measured = await startMeasuredServer(
    (request) =>
      request.messages.at(-1)?.role === 'tool' ? { text: 'Noted.' } : { toolCalls: [INSERT_CALL] },
    {},
    { temporalKind: STORES.temporal, database: STORES.database },
  );
  try {
    const firstStartMs = await timed(() => measured.start());
    const api = jsonClient(apiUrl(measured.env));
    const temporalPid = measured.temporal.pid;
    // The production server's store and process outlive the run, holding earlier runs' histories: what
    // the pauses cost is what grew.
    const databaseAt = () =>
      databaseDisk(STORES.database, measured.schema?.url, measured.schema?.name, measured.dataDir);
    const before = {
      database_mib: (await databaseAt()).mib,
      temporal_store_bytes: await temporalStoreBytes(STORES.temporal, measured.dataDir),
      temporal_rss_mib: rssMib(temporalPid),
    };

    const agentsStarted = performance.now();
    const agentIds = await inParallel(agentCount, CONCURRENCY, async () => {
      const agent = await api.post('/v1/agents/', {
        model: 'openai/gpt-4o-mini',
        include_base_tools: false,
        tools: ['memory_insert'],
        memory_blocks: [{ label: 'human', value: 'The human.' }],
        tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
      });
      return agent.id as string;
    });
    const agentsSeconds = (performance.now() - agentsStarted) / 1000;

    // Turn i pauses in the slot of agent i % agents, that agent's conversation i / agents.
    const slots: Slot[] = Array.from({ length: count }, (_, i) => ({
      agentId: agentIds[i % agentCount],
      first: i < agentCount,
    }));
    const paused: Pause[] = [];
    const creation: Record<string, unknown>[] = [];
    /** Pauses turns up to `target`; their rate and who spent the CPU meanwhile. */
    const pauseUpTo = async (target: number) => {
      const from = paused.length;
      const cpu = { server: cpuSeconds(measured.server!.child.pid!), temporal: cpuSeconds(temporalPid) };
      const bench = process.cpuUsage();
      const started = performance.now();
      const times = await inParallel(target - from, CONCURRENCY, async (i) => {
        const index = from + i;
        const began = performance.now();
        paused[index] = await pauseIn(api, await conversationOf(api, slots[index]));
        return performance.now() - began;
      });
      const seconds = (performance.now() - started) / 1000;
      const benchCpu = process.cpuUsage(bench);
      creation.push({
        paused_from: from,
        paused_to: target,
        seconds: Math.round(seconds),
        pauses_per_second: Math.round(((target - from) / seconds) * 10) / 10,
        pause_request_ms: percentiles(times),
        cpu_seconds: {
          server: Math.round(cpuSeconds(measured.server!.child.pid!) - cpu.server),
          temporal: Math.round(cpuSeconds(temporalPid) - cpu.temporal),
          bench: Math.round((benchCpu.user + benchCpu.system) / 1e6),
          wall_times_cores: Math.round(seconds * os.cpus().length),
        },
      });
      console.error(`paused ${target} (${creation.at(-1)!.pauses_per_second}/s)`);
    };

    /** The inbox at its head and 95% down, and answers of random pauses, each put back paused. */
    const probe = async () => {
      const deep = paused[Math.floor(paused.length * 0.05)].callId;
      const pageTimes = async (query: string) => {
        const times: number[] = [];
        for (let i = 0; i < PAGES; i++) times.push(await timed(() => api.get(`/v1/approvals/?${query}`)));
        return percentiles(times);
      };
      const firstPage = await pageTimes(`limit=${PAGE_SIZE}`);
      const deepPage = await pageTimes(`limit=${PAGE_SIZE}&after=${deep}`);
      const answers: number[] = [];
      for (let i = 0; i < ANSWERS; i++) {
        const pause = takeRandom(paused);
        answers.push(await timed(() => answer(api, pause)));
        paused.push(await pauseIn(api, pause.conversation));
      }
      return {
        inbox_first_page_ms: firstPage,
        inbox_deep_page_ms: deepPage,
        answer_ms: percentiles(answers),
      };
    };

    await pauseUpTo(Math.min(BASELINE, count));
    const atBaseline = await probe();
    await pauseUpTo(count);
    await sleep(2_000);
    const atCount = {
      ...(await probe()),
      server_memory_after_gc: await measured.memory(),
      temporal_rss_mib: rssMib(temporalPid),
      temporal_rss_grown_mib: rssMib(temporalPid) - before.temporal_rss_mib,
      database: await databaseAt().then((disk) => ({
        ...disk,
        grown_mib: Math.round((disk.mib - before.database_mib) * 10) / 10,
      })),
      temporal_store: {
        grown_mib: mib(
          (await temporalStoreBytes(STORES.temporal, measured.dataDir)) - before.temporal_store_bytes,
        ),
      },
    };

    const stopMs = await timed(() => killProcess(measured.server!, 'SIGTERM'));
    const restarted = performance.now();
    await measured.start();
    const healthyMs = performance.now() - restarted;
    await answer(api, takeRandom(paused));
    const firstAnswerMs = performance.now() - restarted;
    await sleep(2_000);
    const memoryAfterRestart = await measured.memory();

    const together = paused.splice(0, AT_ONCE);
    const atOnceMs = await timed(() => Promise.all(together.map((pause) => answer(api, pause))));

    return {
      ...STORES,
      before_the_pauses: before,
      paused: count,
      agents: agentCount,
      agents_created_per_second: Math.round((agentCount / agentsSeconds) * 10) / 10,
      creation,
      [`at_${Math.min(BASELINE, count)}_paused`]: atBaseline,
      [`at_${count}_paused`]: atCount,
      restart: {
        stop_ms: Math.round(stopMs),
        first_start_until_healthy_ms: Math.round(firstStartMs),
        // Health is polled every 250 ms (test/helpers/process.ts).
        start_until_healthy_ms: Math.round(healthyMs),
        start_until_first_answer_done_ms: Math.round(firstAnswerMs),
        server_memory_after_gc: memoryAfterRestart,
      },
      [`answered_${together.length}_at_once_ms`]: Math.round(atOnceMs),
      requests_in_flight: CONCURRENCY,
    };
  } finally {
    await measured.close();
  }
}

/** The CLI: count and agents as arguments; the results on stdout and in bench/paused-scale.json. */
if (require.main === module) {
  const [count = 100_000, agents = 10_000] = process.argv.slice(2).map(Number);
  pausedScale(count, Math.min(agents, count)).then(
    async (results) => {
      const text = JSON.stringify(results, null, 2);
      await writeFormatted(
        process.env.BENCH_OUT ?? path.join(__dirname, '../../bench/paused-scale.json'),
        text,
      );
      console.log(text);
      process.exit(0);
    },
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
