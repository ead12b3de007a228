import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { stubEmbedding } from './openai-stub';

/**
 * An OpenAI-compatible embeddings endpoint whose answers a test steers: refusals (a 429) before the
 * next answers, and a delay per request, so an ingestion can be caught mid-way. Vectors are the
 * OpenAI stub's (`stubEmbedding`), as floats or base64 as the SDK asks.
 */
export interface EmbeddingStub {
  baseURL: string;
  /** The texts of every request answered with vectors, in order. */
  embedded: string[][];
  /** How many requests were refused. */
  refused: number;
  /** The next `count` requests get `status`. */
  refuseNext(status: number, count?: number): void;
  /** Every answer waits this long. */
  setDelay(ms: number): void;
  close(): Promise<void>;
}

export async function startEmbeddingStub(): Promise<EmbeddingStub> {
  let refusals: number[] = [];
  let delayMs = 0;
  const stub = { embedded: [] as string[][], refused: 0 };
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', async () => {
      const send = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.method === 'GET' && req.url?.endsWith('/models'))
        return send(200, { object: 'list', data: [{ id: 'text-embedding-3-small', object: 'model' }] });
      if (req.method !== 'POST' || !req.url?.endsWith('/embeddings'))
        return send(404, { error: 'not found' });
      const status = refusals.shift();
      if (status) {
        stub.refused++;
        return send(status, { error: { message: `stub refusal ${status}`, type: 'rate_limit_exceeded' } });
      }
      if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (res.destroyed) return;
      const { input, model, encoding_format } = JSON.parse(raw) as {
        input: string | string[];
        model: string;
        encoding_format?: string;
      };
      const texts = [input].flat();
      stub.embedded.push(texts);
      const data = texts.map((text, index) => {
        const vector = stubEmbedding(text);
        const embedding =
          encoding_format === 'base64'
            ? Buffer.from(new Float32Array(vector).buffer).toString('base64')
            : vector;
        return { object: 'embedding', index, embedding };
      });
      send(200, { object: 'list', data, model, usage: { prompt_tokens: 1, total_tokens: 1 } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(stub, {
    baseURL: `http://127.0.0.1:${port}/v1`,
    refuseNext: (status: number, count = 1) => (refusals = [...refusals, ...Array(count).fill(status)]),
    setDelay: (ms: number) => (delayMs = ms),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
