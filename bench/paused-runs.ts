/**
 * Paused runs at rest: N agent turns paused on a client tool, and what they cost the server process
 * while they wait (its resident memory), plus how long a pause and an answer's round trip take.
 *
 *   npm run bench:paused -- [count…]     (default 1000; needs PostgreSQL, as the tests do)
 *
 * `npm run bench` runs it with 1,000 and 10,000 as part of the suite (bench/suite.ts).
 *
 * The server runs as `npm start` runs it, API and workers in one process (`--role=all`: each turn's
 * first workflow task comes back eagerly with its start), in a process of its own on a Temporal dev
 * server of its own, so that its memory is the server's alone; the model is a local OpenAI-compatible
 * stub that always calls the client tool.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startOpenAiStub, type ChatRequest, type StubReply } from '../test/helpers/openai-stub';
import { createTestSchema } from '../test/helpers/postgres';
import type { StartedProcess } from '../test/helpers/process';
import { apiUrl, killProcess, serverProcessEnv, startApiProcess } from '../test/helpers/server-processes';
import { startTemporalOf, type TemporalKind } from './infra';
import type { MemorySample } from './memory-probe';
import { inParallel, percentiles } from './stats';

export const CLIENT_TOOL = {
  name: 'ask_user',
  description: 'Asks the user',
  parameters: { type: 'object', properties: {} },
};
export const CONCURRENCY = 16;

/**
 * The memory of process `pid` after a full garbage collection, which bench/memory-probe.ts (preloaded
 * there) takes on SIGUSR2 and writes to `file`.
 */
async function memoryAfterGc(pid: number, file: string): Promise<MemorySample> {
  fs.rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(100)) {
    if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8')) as MemorySample;
  }
  throw new Error(`process ${pid} wrote no memory sample to ${file}`);
}

/**
 * Requests to the API over one keep-alive agent, JSON both ways: node:http, since fetch (undici) spent
 * about three times the CPU per request, and this process shares the machine's two cores with what it
 * measures.
 */
export function jsonClient(base: string) {
  const agent = new http.Agent({ keepAlive: true });
  const send = <T>(method: 'GET' | 'POST', route: string, body?: unknown) =>
    new Promise<T>((resolve, reject) => {
      const request = http.request(
        `${base}${route}`,
        { method, agent, headers: { 'content-type': 'application/json' } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () =>
            res.statusCode! >= 200 && res.statusCode! < 300
              ? resolve(JSON.parse(text) as T)
              : reject(new Error(`${route}: ${res.statusCode} ${text}`)),
          );
        },
      );
      request.on('error', reject);
      request.end(body === undefined ? undefined : JSON.stringify(body));
    });
  return {
    post: (route: string, body: unknown) => send<Record<string, unknown>>('POST', route, body),
    get: <T>(route: string) => send<T>('GET', route),
  };
}

/** POSTs JSON to the API (jsonClient's post). */
export const postJson = (base: string) => jsonClient(base).post;

/** What the measured server keeps its data in: PostgreSQL (a schema of its own) or the embedded PGlite. */
export type DatabaseKind = 'postgres' | 'pglite';

/**
 * The server as `npm start` runs it (API and workers in one process, `--role=all`), in a process of its
 * own with bench/memory-probe.ts preloaded, on a Temporal server (a dev server of its own, or Temporal's
 * production server: scripts/temporal-production.sh) and a database (a PostgreSQL schema of its own, or
 * PGlite in its data folder); its model the stub whose replies `reply` gives. `start` starts the server
 * again (after `server` was stopped); `close` stops everything and removes what it made.
 */
export async function startMeasuredServer(
  reply: (request: ChatRequest) => StubReply,
  extra: Record<string, string> = {},
  {
    temporalKind = 'dev',
    database = 'postgres',
  }: { temporalKind?: TemporalKind; database?: DatabaseKind } = {},
) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-bench-'));
  const schema = database === 'postgres' ? await createTestSchema() : undefined;
  const stub = await startOpenAiStub();
  stub.setDefault(reply);
  const temporal = await startTemporalOf(temporalKind, dataDir);
  const probeFile = path.join(dataDir, 'memory.json');
  const env = await serverProcessEnv({
    dataDir,
    databaseUrl: schema?.url,
    temporalAddress: temporal.address,
    openAiBaseUrl: stub.baseURL,
    extra: {
      NODE_OPTIONS: `--require ${path.join(__dirname, 'memory-probe.js')}`,
      BENCH_MEMORY_PROBE_FILE: probeFile,
      ...extra,
    },
  });
  const measured = {
    env,
    dataDir,
    schema,
    temporal,
    server: undefined as StartedProcess | undefined,
    start: async () => (measured.server = await startApiProcess(env, 'all')),
    /** The server's memory after a full garbage collection. */
    memory: () => memoryAfterGc(measured.server!.child.pid!, probeFile),
    close: async () => {
      if (measured.server) await killProcess(measured.server, 'SIGKILL');
      await temporal.stop();
      await stub.close();
      await schema?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return measured;
}

/**
 * The server's memory with no run paused and with each of `checkpoints` (ascending counts) paused on a
 * client tool; the time each pause took, and the round trip of 50 answers.
 */
export async function pausedRunsAtRest(checkpoints: number[]) {
  const cacheSize = process.env.WORKER_MAX_CACHED_WORKFLOWS;
  const measured = await startMeasuredServer(
    (request) =>
      request.messages.at(-1)?.role === 'tool' ? { text: 'Thanks.' } : { toolCalls: [{ name: 'ask_user' }] },
    cacheSize ? { WORKER_MAX_CACHED_WORKFLOWS: cacheSize } : {},
  );
  try {
    await measured.start();
    const post = postJson(apiUrl(measured.env));
    const pause = async () => {
      const agent = await post('/v1/agents/', { model: 'openai/gpt-4o-mini', include_base_tools: false });
      const started = performance.now();
      const response = await post(`/v1/agents/${agent.id}/messages`, {
        messages: [{ role: 'user', content: 'Ask me something' }],
        client_tools: [CLIENT_TOOL],
      });
      const elapsed = performance.now() - started;
      const messages = response.messages as { tool_call: { tool_call_id: string } }[];
      return { agentId: agent.id as string, callId: messages.at(-1)!.tool_call.tool_call_id, elapsed };
    };

    await sleep(2_000);
    const memory: Record<string, MemorySample> = { '0': await measured.memory() };
    const paused: Awaited<ReturnType<typeof pause>>[] = [];
    for (const count of checkpoints) {
      paused.push(...(await inParallel(count - paused.length, CONCURRENCY, pause)));
      await sleep(2_000);
      memory[String(count)] = await measured.memory();
    }

    const answered = await inParallel(Math.min(50, paused.length), CONCURRENCY, async (i) => {
      const { agentId, callId } = paused[i];
      const started = performance.now();
      await post(`/v1/agents/${agentId}/messages`, {
        messages: [
          {
            type: 'approval',
            approvals: [{ type: 'tool', tool_call_id: callId, tool_return: 'yes', status: 'success' }],
          },
        ],
      });
      return performance.now() - started;
    });

    return {
      server_memory_after_gc_by_paused_runs: memory,
      pause_ms: percentiles(paused.map((r) => r.elapsed)),
      answer_round_trip_ms: percentiles(answered),
      requests_in_flight: CONCURRENCY,
      worker_max_cached_workflows: Number(cacheSize ?? 200),
    };
  } finally {
    await measured.close();
  }
}

/** The CLI: counts as arguments; the results on stdout, and in the file BENCH_OUT names if set. */
if (require.main === module) {
  const counts = process.argv.slice(2).map(Number);
  pausedRunsAtRest(counts.length ? counts : [1000]).then(
    (results) => {
      const text = JSON.stringify(results, null, 2);
      if (process.env.BENCH_OUT) fs.writeFileSync(process.env.BENCH_OUT, text);
      console.log(text);
      process.exit(0);
    },
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
