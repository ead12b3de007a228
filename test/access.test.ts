import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { isLoopbackHost } from '../src/api/access';
import { freePort, testTemporalAddress } from './helpers/env';
import { startTestServer, type TestServer } from './helpers/server';
import { registeredRoutes } from './helpers/routes';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { killProcess, serverProcessEnv } from './helpers/server-processes';
import { startProcess, waitForStatus, type StartedProcess } from './helpers/process';

const PASSWORD = 'correct horse battery staple';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A raw request: fetch may not set Host, and must not be trusted to send Origin as given. */
function request(
  base: string,
  pathname: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const url = new URL(pathname, base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: options.method ?? 'GET',
        headers: { 'content-type': 'application/json', ...options.headers },
      },
      (res) => {
        let body = '';
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('loopback names', () => {
  it.each(['localhost', 'api.localhost', '127.0.0.1', '127.8.9.10', '[::1]', '::1', '::ffff:127.0.0.1'])(
    '%s is loopback',
    (host) => expect(isLoopbackHost(host)).toBe(true),
  );
  it.each(['0.0.0.0', '::', '10.0.0.1', '169.254.169.254', 'example.com', 'localhost.example.com', '[::2]'])(
    '%s is not',
    (host) => expect(isLoopbackHost(host)).toBe(false),
  );
});

/** What a browser or a load balancer opens without the password: the API's own calls stay closed. */
const OPEN_ROUTES = [
  '/v1/health',
  '/openapi.json',
  '/docs',
  '/approvals',
  '/ag-ui',
  '/v1/tools/mcp/oauth/client-metadata.json',
];
/** Open routes that act only with what the request carries: without it, a 4xx of their own. */
const CREDENTIAL_ROUTES: Record<string, number> = { '/v1/tools/mcp/oauth/callback': 400 };

describe('password mode (LETTA_SERVER_PASSWORD)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      LETTA_SERVER_PASSWORD: PASSWORD,
      AUTH_FAILURE_LIMIT: '1000',
      OPENAI_API_KEY: 'unused',
    });
  });
  afterAll(() => server?.stopAll());

  it('answers every route but health and the API reference with 401 without the password', async () => {
    // The routes as the app registers them: a route added later is covered without editing this test.
    const routes = registeredRoutes().map((r) => ({
      method: r.method.toUpperCase(),
      path: r.path.replace(/:(\w+)/g, 'x-$1'),
    }));
    expect(routes.length).toBeGreaterThan(40);
    for (const { method, path: route } of routes) {
      const answer = await request(server.url, route, {
        method,
        body: ['GET', 'DELETE'].includes(method) ? undefined : '{}',
      });
      // A signed approval link is its own credential: one not signed by this server is gone (410).
      const expected = OPEN_ROUTES.includes(route)
        ? 200
        : route.startsWith('/approvals/act/')
          ? 410
          : (CREDENTIAL_ROUTES[route] ?? 401);
      expect({ method, route, status: answer.status }).toEqual({ method, route, status: expected });
      if (expected === 401) expect(JSON.parse(answer.body)).toEqual({ detail: 'Unauthorized' });
    }
    expect((await request(server.url, '/v1/no-such-route')).status).toBe(401);
  });

  it('refuses a wrong password, in either header', async () => {
    for (const headers of <Record<string, string>[]>[
      { authorization: 'Bearer wrong' },
      { authorization: `Basic ${PASSWORD}` },
      { 'x-bare-password': `password ${PASSWORD}x` },
      { 'x-bare-password': PASSWORD },
    ]) {
      expect((await request(server.url, '/v1/agents/', { headers })).status).toBe(401);
    }
  });

  it('lets the official client in with apiKey, and Letta ADE with X-BARE-PASSWORD', async () => {
    const client = new Letta({ baseURL: server.url, apiKey: PASSWORD });
    const created = await client.agents.create({ model: 'openai/gpt-4o-mini', name: 'authorized' });
    expect((await client.agents.retrieve(created.id)).name).toBe('authorized');

    const bare = await request(server.url, `/v1/agents/${created.id}`, {
      headers: { 'x-bare-password': `password ${PASSWORD}` },
    });
    expect(bare.status).toBe(200);
    const wrong = new Letta({ baseURL: server.url, apiKey: 'guess', maxRetries: 0 });
    await expect(wrong.agents.list()).rejects.toMatchObject({ status: 401 });
  });
});

describe('failed passwords from one address', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ LETTA_SERVER_PASSWORD: PASSWORD, AUTH_FAILURE_LIMIT: '3' });
  });
  afterAll(() => server?.stopAll());

  it('are limited: past the limit the address is refused, even with the right password', async () => {
    const right = { authorization: `Bearer ${PASSWORD}` };
    expect((await request(server.url, '/v1/tools/', { headers: right })).status).toBe(200);
    for (let i = 0; i < 3; i++)
      expect(
        (await request(server.url, '/v1/tools/', { headers: { authorization: 'Bearer no' } })).status,
      ).toBe(401);
    const limited = await request(server.url, '/v1/tools/', { headers: { authorization: 'Bearer no' } });
    expect(limited.status).toBe(429);
    expect(JSON.parse(limited.body).detail).toMatch(/Too many failed password attempts/);
    expect((await request(server.url, '/v1/tools/', { headers: right })).status).toBe(429);
    expect((await request(server.url, '/v1/health/')).status).toBe(200);
  });
});

describe('Host and Origin checks', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      ALLOWED_HOSTS: 'agents.example.com,.corp.example',
      CORS_ORIGINS: 'https://app.example.com/',
    });
  });
  afterAll(() => server?.stopAll());

  it('refuses a Host that is not this server (DNS rebinding)', async () => {
    const port = new URL(server.url).port;
    for (const host of [
      `evil.example:${port}`,
      'attacker.com',
      `127.0.0.1.nip.io:${port}`,
      `corp.example.evil:${port}`,
    ]) {
      const answer = await request(server.url, '/v1/agents/', { headers: { host } });
      expect({ host, status: answer.status }).toEqual({ host, status: 403 });
      expect(JSON.parse(answer.body).detail).toMatch(/ALLOWED_HOSTS/);
    }
    for (const host of [
      `localhost:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      'agents.example.com',
      `a.corp.example:${port}`,
    ]) {
      const answer = await request(server.url, '/v1/agents/', { headers: { host } });
      expect({ host, status: answer.status }).toEqual({ host, status: 200 });
    }
  });

  it('refuses requests a foreign web page makes the browser send, and grants it nothing', async () => {
    const foreign = await request(server.url, '/v1/agents/', {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'content-type': 'text/plain' },
      body: '{"model":"openai/gpt-4o-mini"}',
    });
    expect(foreign.status).toBe(403);
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
    const preflight = await request(server.url, '/v1/agents/', {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    expect((await request(server.url, '/v1/agents/')).headers['access-control-allow-origin']).toBeUndefined();
  });

  it('grants a listed origin, and its preflight with Letta headers', async () => {
    const origin = 'https://app.example.com';
    const preflight = await request(server.url, '/v1/agents/', {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,x-bare-password,content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(origin);
    expect(preflight.headers['access-control-allow-headers']).toMatch(/x-bare-password/);
    const listed = await request(server.url, '/v1/agents/', { headers: { origin } });
    expect(listed.status).toBe(200);
    expect(listed.headers['access-control-allow-origin']).toBe(origin);
  });
});

describe('a public bind without a password', () => {
  let schema: TestSchema;
  let dataDir: string;
  let api: StartedProcess | undefined;
  beforeAll(async () => {
    schema = await createTestSchema();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'access-'));
  });
  afterAll(async () => {
    if (api) await killProcess(api, 'SIGKILL');
    await schema.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('gets a password made for the run, printed once, and enforced', async () => {
    const env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: testTemporalAddress(),
      openAiBaseUrl: 'http://127.0.0.1:9/v1',
      extra: { HOST: '0.0.0.0', PORT: String(await freePort()) },
    });
    api = startProcess('node', ['dist/src/main.js', '--role=api'], env);
    const base = `http://127.0.0.1:${env.PORT}`;
    await waitForStatus(`${base}/v1/health/`, 200, api, 60_000);
    const password = /^ {4}(\S+)$/m.exec(api.output())?.[1];
    expect(password).toBeDefined();
    expect(api.output().split(password!).length).toBe(2); // printed once, and in no log line
    expect((await request(base, '/v1/agents/')).status).toBe(401);
    const ok = await request(base, '/v1/agents/', { headers: { authorization: `Bearer ${password}` } });
    expect(ok.status).toBe(200);
  });
});
