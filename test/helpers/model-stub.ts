import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local HTTP server that speaks one model provider's wire protocol, so that provider's real SDK
 * and our real provider code run against it. Tests script its replies and read the requests it got;
 * each protocol supplies how a scripted reply is rendered (openai-stub.ts, anthropic-stub.ts).
 */
export interface StubToolCall {
  name: string;
  arguments?: Record<string, unknown> | string;
  id?: string;
}

interface ReplyOptions {
  /** The model's reasoning (OpenAI-compatible `reasoning_content`, Anthropic's thinking block). */
  reasoning?: string;
  delayMs?: number;
  /** Answer once this settles: the test holds the reply until it lets it go. */
  heldUntil?: Promise<unknown>;
  /** Answer a streaming request with one JSON body, as some OpenAI-compatible servers do. */
  ignoresStream?: boolean;
}

export type StubReply =
  | ({ text: string; toolCalls?: StubToolCall[] } & ReplyOptions)
  | ({ toolCalls: StubToolCall[]; text?: string } & ReplyOptions)
  | { status: number; body?: unknown };

export type ScriptedReply = Exclude<StubReply, { status: number }>;

export interface ModelStub<Request> {
  baseURL: string;
  requests: Request[];
  /** Replies in order; a function decides from the request. When none are left: the default. */
  enqueue(...replies: (StubReply | ((request: Request) => StubReply))[]): void;
  /** Used whenever the queue is empty (initially a plain "ok"). */
  setDefault(reply: (request: Request) => StubReply): void;
  close(): Promise<void>;
}

export interface WireProtocol<Request> {
  /** The path suffix the provider's SDK posts to, e.g. `/chat/completions`. */
  path: string;
  /** The base URL the SDK is configured with, given the server's origin. */
  baseURL(origin: string): string;
  success(request: Request, reply: ScriptedReply): unknown;
  /** The same reply as the provider streams it (a request with `stream: true`): its SSE frames. */
  stream(request: Request, reply: ScriptedReply): string[];
  error(status: number): unknown;
  /** `GET` of this path suffix lists the models the stub serves, in the provider's shape. */
  models: { path: string; body: unknown };
  /** `POST` of this path suffix answers at once, whatever the queue holds (an embeddings endpoint). */
  instant?: { path: string; answer(body: unknown): unknown };
}

let counter = 0;
/** Unique ids for the stubs' tool calls and responses. */
export const nextStubId = () => (++counter).toString().padStart(6, '0');

export const argumentsText = (call: StubToolCall) =>
  typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {});

/** A streamed text's pieces: a few characters each, as a model's tokens come. */
export const tokensOf = (text: string) => text.match(/[\s\S]{1,4}/g) ?? [];

/** Pause between two streamed frames, so that they arrive over time. */
const FRAME_GAP_MS = 2;

const sendJson = (res: http.ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

export async function startModelStub<Request>(protocol: WireProtocol<Request>): Promise<ModelStub<Request>> {
  const requests: Request[] = [];
  const queue: (StubReply | ((request: Request) => StubReply))[] = [];
  let fallback: (request: Request) => StubReply = () => ({ text: 'ok' });
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', async () => {
      if (req.method === 'GET' && req.url?.split('?')[0].endsWith(protocol.models.path)) {
        return sendJson(res, 200, protocol.models.body);
      }
      if (req.method === 'POST' && protocol.instant && req.url?.endsWith(protocol.instant.path)) {
        return sendJson(res, 200, protocol.instant.answer(JSON.parse(raw)));
      }
      if (req.method !== 'POST' || !req.url?.endsWith(protocol.path)) {
        return sendJson(res, 404, { error: { message: 'not found' } });
      }
      const request = JSON.parse(raw) as Request;
      requests.push(request);
      const next = queue.shift() ?? fallback;
      const reply = typeof next === 'function' ? next(request) : next;
      if ('status' in reply) return sendJson(res, reply.status, reply.body ?? protocol.error(reply.status));
      if (reply.delayMs || reply.heldUntil) {
        // A client that gives up (a cancelled run) ends the wait, so no timer outlives the test.
        await new Promise<void>((resolve) => {
          const timer = reply.delayMs ? setTimeout(resolve, reply.delayMs) : undefined;
          reply.heldUntil?.then(() => resolve());
          res.on('close', () => (clearTimeout(timer), resolve()));
        });
      }
      if (res.writableEnded || res.destroyed) return;
      if (!(request as { stream?: boolean }).stream || reply.ignoresStream)
        return sendJson(res, 200, protocol.success(request, reply));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const frame of protocol.stream(request, reply)) {
        if (res.destroyed) return;
        res.write(frame);
        await new Promise((resolve) => setTimeout(resolve, FRAME_GAP_MS));
      }
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: protocol.baseURL(`http://127.0.0.1:${port}`),
    requests,
    enqueue: (...replies) => queue.push(...replies),
    setDefault: (reply) => (fallback = reply),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
