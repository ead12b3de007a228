/**
 * A worker-only process forwards its sandboxes' requests to the API at LETTA_PUBLIC_URL
 * (src/api/api-socket.ts). A request that finds no API listening (its replicas restarting in a
 * deploy) is sent again until one listens, once, whole; past the retry window it is a 502, and a body
 * past the API's limit a 413, never held.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { forwardingToApi, type ForwardingOptions } from '../src/api/api-socket';
import { freePort } from './helpers/env';

const TOKEN = 'Bearer lct-0123456789abcdef0123456789abcdef';

/** The forwarder listening on a port of its own, forwarding to 127.0.0.1:`apiPort`. */
async function forwarder(apiPort: number, options: ForwardingOptions) {
  const server = http.createServer(forwardingToApi(`http://127.0.0.1:${apiPort}`, options));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** An API that answers every request with what it received, counting them. */
async function echoApi(port: number) {
  const received: { path: string; body: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body });
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ echoed: body }));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const post = (url: string, body: string) =>
  fetch(`${url}/v1/agents/a/archival-memory`, {
    method: 'POST',
    headers: { authorization: TOKEN, 'content-type': 'application/json' },
    body,
  });

describe("a worker's forwarding of its sandboxes' requests to the API", () => {
  it('sends a request again until the API listens, and the API takes it once, whole', async () => {
    const apiPort = await freePort();
    const proxy = await forwarder(apiPort, { retryMs: 10_000, maxBodyBytes: 1024 });
    let api: Awaited<ReturnType<typeof echoApi>> | undefined;
    try {
      const answered = post(proxy.url, '{"text":"start call_1"}');
      await new Promise((resolve) => setTimeout(resolve, 700)); // the API restarting meanwhile
      api = await echoApi(apiPort);
      const res = await answered;
      expect(res.status).toBe(201);
      expect(await res.json()).toEqual({ echoed: '{"text":"start call_1"}' });
      expect(api.received).toEqual([
        { path: '/v1/agents/a/archival-memory', body: '{"text":"start call_1"}' },
      ]);
    } finally {
      await proxy.close();
      await api?.close();
    }
  });

  it('answers 502 once no API has listened for the retry window', async () => {
    const proxy = await forwarder(await freePort(), { retryMs: 300, maxBodyBytes: 1024 });
    try {
      const res = await post(proxy.url, '{}');
      expect(res.status).toBe(502);
      expect(((await res.json()) as { detail: string }).detail).toContain('did not answer');
    } finally {
      await proxy.close();
    }
  });

  it('refuses a body past the limit with 413, and a request without a token with 401, forwarding neither', async () => {
    const apiPort = await freePort();
    const api = await echoApi(apiPort);
    const proxy = await forwarder(apiPort, { retryMs: 1_000, maxBodyBytes: 16 });
    try {
      expect((await post(proxy.url, JSON.stringify({ text: 'x'.repeat(100) }))).status).toBe(413);
      const bare = await fetch(`${proxy.url}/v1/agents/`, { method: 'GET' });
      expect(bare.status).toBe(401);
      expect(api.received).toEqual([]);
    } finally {
      await proxy.close();
      await api.close();
    }
  });
});
