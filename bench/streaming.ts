/**
 * Streaming's cost: from a token leaving the model to the client's SSE chunk that carries it, with one
 * turn streaming and with STREAMS at once (`stream_tokens`, Letta's `POST /v1/agents/{id}/messages/stream`).
 *
 *   npm run bench:streaming          (needs PostgreSQL, as the tests do)
 *
 * `npm run bench` runs it as part of the suite (bench/suite.ts), in a process of its own.
 *
 * The server runs as `npm start` runs it, API and workers in one process (`--role=all`), in a process
 * of its own on a Temporal dev server and a PostgreSQL schema of its own. The model is a local
 * OpenAI-compatible server that streams its reply one token every 5–20 ms, each token the moment it
 * is written (`performance.now()` of this process); the clients, in this process too, read the
 * moments back out of the chunks they get and take the difference on the same clock. A round's
 * turns wait for each other before their tokens start, so that they stream at once.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { postJson } from './paused-runs';
import { printFigures, withServerProcess, type ServerProcess } from './server-process';
import { percentiles } from './stats';

/** Tokens measured at each concurrency: about this many, split evenly over its turns. */
const TOKENS = Number(process.env.BENCH_STREAM_TOKENS ?? 1000);
const STREAMS = 16;
/** The gap between two of the model's tokens: drawn evenly from this range, so the figure is latency, not backlog. */
const GAP_MS = { min: 5, max: 20 };
/** The target: a token's trip from the model to the client, at STREAMS turns at once. */
export const STREAMING_TARGET_P50_MS = 5;

/** A token as the model writes it: the moment it leaves, which the client reads back. */
const tokenText = (at: number) => `t${at.toFixed(3)};`;
const TOKEN = /t(\d+\.\d{3});/g;

interface StampingModel {
  baseURL: string;
  /** The next round: `together` turns of `tokens` tokens each. */
  nextRound(tokens: number, together: number): void;
  close(): Promise<void>;
}

/**
 * An OpenAI-compatible chat completions server that streams `tokens` stamped tokens per reply, paced,
 * once `together` requests have come: a round's turns start streaming at the same moment.
 */
async function stampingModel(): Promise<StampingModel> {
  let round = { tokens: 0, together: 1, waiting: [] as (() => void)[] };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      if (req.method === 'GET') {
        const models = { object: 'list', data: [{ id: 'gpt-4o-mini', object: 'model', owned_by: 'bench' }] };
        return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(models));
      }
      const { tokens, together, waiting } = round;
      await new Promise<void>((resolve) => {
        waiting.push(resolve);
        if (waiting.length === together) waiting.forEach((go) => go());
      });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const frame = (delta: object, finish: string | null = null) =>
        `data: ${JSON.stringify({
          id: 'chatcmpl-bench',
          object: 'chat.completion.chunk',
          created: 0,
          model: 'gpt-4o-mini',
          choices: [{ index: 0, delta, finish_reason: finish }],
        })}\n\n`;
      res.write(frame({ role: 'assistant', content: '' }));
      for (let i = 0; i < tokens && !res.destroyed; i++) {
        await sleep(GAP_MS.min + Math.random() * (GAP_MS.max - GAP_MS.min));
        res.write(frame({ content: tokenText(performance.now()) }));
      }
      res.end(frame({}, 'stop') + 'data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    nextRound(tokens: number, together: number) {
      round = { tokens, together, waiting: [] };
    },
    close: () =>
      new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/**
 * One turn streamed with `stream_tokens` through node:http: each token's latency, from the moment the
 * model wrote it to the moment the chunk carrying it was read here.
 */
function streamedTurn(base: string, agentId: string): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const latencies: number[] = [];
    const request = http.request(
      `${base}/v1/agents/${agentId}/messages/stream`,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream: HTTP ${res.statusCode}`));
        let pending = '';
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          const now = performance.now();
          pending += text;
          const events = pending.split('\n\n');
          pending = events.pop()!;
          for (const event of events) {
            const data = event.slice(event.indexOf('data: ') + 'data: '.length);
            if (!data.startsWith('{')) continue;
            const chunk = JSON.parse(data) as {
              message_type: string;
              content?: unknown;
              stop_reason?: string;
            };
            if (chunk.message_type === 'stop_reason' && chunk.stop_reason !== 'end_turn')
              return reject(new Error(`the turn stopped: ${chunk.stop_reason}`));
            if (chunk.message_type !== 'assistant_message' || typeof chunk.content !== 'string') continue;
            for (const [, at] of chunk.content.matchAll(TOKEN)) latencies.push(now - Number(at));
          }
        });
        res.on('end', () => resolve(latencies));
        res.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(JSON.stringify({ messages: [{ role: 'user', content: 'Go' }], stream_tokens: true }));
  });
}

/** The CPU time process `pid` has used, in ms (clock ticks of 10 ms). */
function processCpuMs(pid: number): number {
  const [utime, stime] = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ').slice(11, 13);
  return (Number(utime) + Number(stime)) * 10;
}

/** p50, p95, p99 and the largest, in ms. */
function latencyFigures(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const p99 = sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))];
  const { p50, p95, max, n } = percentiles(values);
  return { p50, p95, p99: Math.round(p99 * 100) / 100, max, n };
}

/** Token latencies at 1 and at STREAMS turns at once, each after an untimed round of its own. */
export async function streamingLatency() {
  const model = await stampingModel();
  try {
    return await withServerProcess(model.baseURL, (server) => measure(model, server), { LOG_LEVEL: 'warn' });
  } finally {
    await model.close();
  }
}

async function measure(model: StampingModel, server: ServerProcess) {
  const post = postJson(server.base);
  const newAgent = async () =>
    (await post('/v1/agents/', { model: 'openai/gpt-4o-mini', include_base_tools: false })).id as string;
  /** `streams` turns at once, on agents of their own, about TOKENS tokens in all. */
  const round = async (streams: number) => {
    const perTurn = Math.ceil(TOKENS / streams);
    const agents = await Promise.all(Array.from({ length: streams }, newAgent));
    model.nextRound(perTurn, streams);
    const latencies = (await Promise.all(agents.map((id) => streamedTurn(server.base, id)))).flat();
    if (latencies.length !== perTurn * streams)
      throw new Error(`${latencies.length} tokens reached the clients of ${perTurn * streams} streamed`);
    return latencies;
  };
  const pid = server.process.child.pid!;
  const figures: Record<string, ReturnType<typeof latencyFigures> & { load_average: number }> = {};
  const cpuPerToken: Record<string, number> = {};
  for (const streams of [1, STREAMS]) {
    await round(streams);
    const cpu = processCpuMs(pid);
    const latencies = await round(streams);
    const key = `streams_${streams}`;
    // The machine's 1-minute load average after the round: a latency is only as good as the CPU it got.
    figures[key] = { ...latencyFigures(latencies), load_average: os.loadavg()[0] };
    // The server's CPU over the round (its turns' start and end too) per token: what the load costs it.
    cpuPerToken[key] = Math.round(((processCpuMs(pid) - cpu) / latencies.length) * 100) / 100;
  }
  return {
    token_to_client_ms: figures,
    server_cpu_ms_per_token: cpuPerToken,
    token_gap_ms: GAP_MS,
    clock: 'performance.now() of the bench process, which runs both the model and the clients',
    target_p50_ms: STREAMING_TARGET_P50_MS,
    cores: os.cpus().length,
  };
}

if (require.main === module) void printFigures(streamingLatency);
