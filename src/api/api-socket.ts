/**
 * The API's socket for local sandboxes without a network (src/sandbox/python/api_bridge.py bridges
 * it in): the one way out of such a sandbox, for a sandboxed call's scoped access token alone.
 *
 * In a process that serves the API, the socket serves the same app, taking tokens only (`tokensOnly`).
 * In a worker-only process (`--role=worker`) it forwards to the API at LETTA_PUBLIC_URL the requests
 * that carry a token, and answers 401 to the rest without forwarding them, so the API never sees a
 * sandbox's request without one.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { isAccessToken } from '../access/access-tokens';
import { bearerOf } from './access';
import { closeServer, listen } from './http-server';

const answer = (res: http.ServerResponse, status: number, detail: string) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ detail }));

/** How a worker-only process forwards its sandboxes' requests to the API. */
export interface ForwardingOptions {
  /** How long a request finds no API listening (one restarting in a deploy) before it is answered 502. */
  retryMs: number;
  /** The largest body forwarded (the API's own limit): it is held, to be sent again. */
  maxBodyBytes: number;
}

/** Connection errors of a request no API took: nothing of it was sent, so sending it again is safe. */
const NOT_TAKEN = new Set(['ECONNREFUSED', 'ENOENT', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Forwards requests bearing a scoped access token to the API at `apiUrl`, path prefix kept. A request
 * that finds no API listening is sent again until one does, for up to `retryMs`: a tool's call to the
 * API outlives a deploy of the API's replicas, as the tool's own call outlives a deploy of the workers.
 */
export function forwardingToApi(apiUrl: string, options: ForwardingOptions): http.RequestListener {
  const base = new URL(apiUrl);
  const prefix = base.pathname.replace(/\/$/, '');
  const transport = base.protocol === 'https:' ? https : http;
  return (req, res) => {
    const bearer = bearerOf(req);
    if (!bearer || !isAccessToken(bearer)) return answer(res, 401, 'Unauthorized');
    const { 'x-bare-password': _password, ...headers } = req.headers;
    const deadline = Date.now() + options.retryMs;
    const send = (body: Buffer, delayMs = 100) => {
      const upstream = transport.request(
        new URL(prefix + (req.url ?? '/'), base),
        { method: req.method, headers: { ...headers, host: base.host } },
        (reply) => {
          res.writeHead(reply.statusCode ?? 502, reply.headers);
          reply.pipe(res);
        },
      );
      upstream.on('error', (error: NodeJS.ErrnoException) => {
        if (NOT_TAKEN.has(error.code ?? '') && Date.now() + delayMs < deadline && !res.destroyed)
          return void setTimeout(() => send(body, Math.min(delayMs * 2, 2_000)), delayMs);
        if (res.headersSent) res.destroy(error);
        else answer(res, 502, `The API at LETTA_PUBLIC_URL did not answer: ${error.message}`);
      });
      upstream.end(body);
    };
    void bodyOf(req, options.maxBodyBytes).then(
      (body) => (body ? send(body) : answer(res, 413, 'Request body too large')),
      () => res.destroy(),
    );
  };
}

/** A request's body, or none when it is larger than `maxBytes`. */
function bodyOf(req: http.IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) chunks.push(chunk);
    });
    req.on('end', () => resolve(size <= maxBytes ? Buffer.concat(chunks) : undefined));
    req.on('error', reject);
  });
}

/**
 * This process's API before it listens: `listener` holds each request until `resolve` gives the app,
 * and `url` its address; once `fail` says it never will (the server stops), requests are answered 503
 * and the address is none.
 */
export function lateApi(): {
  listener: http.RequestListener;
  url: Promise<string | undefined>;
  resolve(app: http.RequestListener, url: string): void;
  fail(): void;
} {
  let resolve: (api: { app: http.RequestListener; url: string } | undefined) => void = () => {};
  const ready = new Promise<{ app: http.RequestListener; url: string } | undefined>((r) => (resolve = r));
  return {
    listener: (req, res) =>
      void ready.then((api) => (api ? api.app(req, res) : answer(res, 503, 'The API is stopping'))),
    url: ready.then((api) => api?.url),
    resolve: (app, url) => resolve({ app, url }),
    fail: () => resolve(undefined),
  };
}

/** A listener for the API's socket; `path` is what sandboxes bind in. */
export interface ApiSocket {
  path: string;
  close(): Promise<void>;
}

/**
 * Listens on a fresh socket, connectable by the sandboxes' uid (nobody, when this server is root): its
 * folder can be passed through but not listed. Anyone on the host who can reach it could also reach
 * the API's port; it takes tokens only.
 */
export async function openApiSocket(
  listener: http.RequestListener,
  keepAliveTimeout: number,
): Promise<ApiSocket> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-api-'));
  const socket = path.join(dir, 'api.sock');
  try {
    const server = await listen(listener, { path: socket }, keepAliveTimeout);
    fs.chmodSync(dir, 0o711);
    fs.chmodSync(socket, 0o666);
    return {
      path: socket,
      close: async () => {
        await closeServer(server);
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
