/**
 * Paused runs at rest: N agent steps paused on a client tool, and what they cost the worker process
 * while they wait (its resident memory), plus how long a pause and an answer's round trip take.
 *
 *   npm run bench:paused -- [count]      (default 1000; needs PostgreSQL, as the tests do)
 *
 * The API and the worker run as separate processes (`--role=api`, `--role=worker`) on a Temporal dev
 * server of their own; the model is a local OpenAI-compatible stub that always calls the client tool.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../src/paths';
import { startOpenAiStub } from '../test/helpers/openai-stub';
import { createTestSchema } from '../test/helpers/postgres';
import type { StartedProcess } from '../test/helpers/process';
import {
  apiUrl,
  killProcess,
  serverProcessEnv,
  startApiProcess,
  startWorkerProcess,
} from '../test/helpers/server-processes';
import { startTemporalServer } from '../test/helpers/temporal-server';

const CLIENT_TOOL = {
  name: 'ask_user',
  description: 'Asks the user',
  parameters: { type: 'object', properties: {} },
};
const CONCURRENCY = 16;

const rssMiB = (pid: number) => {
  const line = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return line ? Math.round(Number(line[1]) / 1024) : NaN;
};

function percentiles(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  return { p50: at(50), p95: at(95), max: sorted[sorted.length - 1] };
}

async function inParallel<T>(count: number, work: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await work(i);
      }
    }),
  );
  return results;
}

async function main() {
  const count = Number(process.argv[2] ?? 1000);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-bench-'));
  const schema = await createTestSchema();
  const stub = await startOpenAiStub();
  stub.setDefault((request) =>
    request.messages.at(-1)?.role === 'tool' ? { text: 'Thanks.' } : { toolCalls: [{ name: 'ask_user' }] },
  );
  const { server: temporal } = await startTemporalServer(dataDir);
  const cacheSize = process.env.WORKER_MAX_CACHED_WORKFLOWS;
  const env = await serverProcessEnv({
    dataDir,
    databaseUrl: schema.url,
    temporalAddress: temporal.address,
    openAiBaseUrl: stub.baseURL,
    extra: cacheSize ? { WORKER_MAX_CACHED_WORKFLOWS: cacheSize } : {},
  });
  const processes: StartedProcess[] = [];
  try {
    const api = await startApiProcess(env);
    processes.push(api);
    const worker = await startWorkerProcess(env);
    processes.push(worker);
    const base = apiUrl(env);
    const post = async (route: string, body: unknown) => {
      const res = await fetch(`${base}${route}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${route}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<Record<string, unknown>>;
    };
    const pause = async () => {
      const agent = await post('/v1/agents/', { model: 'openai/gpt-4o-mini' });
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
    const idle = rssMiB(worker.child.pid!);
    const warm = await inParallel(50, pause);
    await sleep(2_000);
    const afterWarm = rssMiB(worker.child.pid!);
    const half = Math.floor(count / 2);
    const middle = await inParallel(half - warm.length, pause);
    await sleep(2_000);
    const afterHalf = rssMiB(worker.child.pid!);
    const rest = await inParallel(count - half, pause);
    await sleep(2_000);
    const afterAll = rssMiB(worker.child.pid!);

    const answered = await inParallel(50, async (i) => {
      const { agentId, callId } = warm[i];
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

    const results = {
      paused_runs: count,
      worker_rss_mib: {
        idle,
        after_50_paused: afterWarm,
        [`after_${half}_paused`]: afterHalf,
        [`after_${count}_paused`]: afterAll,
      },
      // Growth over the second half: what one more paused run costs once the worker has warmed up.
      worker_rss_per_paused_run_kib: Math.round(((afterAll - afterHalf) * 1024) / (count - half)),
      pause_ms: percentiles([...warm, ...middle, ...rest].map((r) => Math.round(r.elapsed))),
      answer_round_trip_ms: percentiles(answered.map(Math.round)),
      worker_max_cached_workflows: Number(cacheSize ?? 200),
      measured_at: new Date().toISOString(),
    };
    const file = path.join(projectRoot, 'bench', 'results.json');
    const all = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
    fs.writeFileSync(file, `${JSON.stringify({ ...all, paused_runs_at_rest: results }, null, 2)}\n`);
    console.log(JSON.stringify(results, null, 2));
  } finally {
    for (const proc of processes) await killProcess(proc, 'SIGKILL');
    await temporal.stop();
    await stub.close();
    await schema.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
