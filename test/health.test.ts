import { connectPostgres } from '../src/db/database';
import express from 'express';
import { healthRouter } from '../src/api/health';
import { startServer, type RunningServer } from '../src/server';
import { version } from '../src/paths';
import { LETTA_API_VERSION } from '../src/api/health';
import { freePort, silentLogger, testConfig, testTemporalAddress, uniqueSuffix } from './helpers/env';
import { createTestSchema, type TestSchema } from './helpers/postgres';

describe('the REST API on a running server', () => {
  let schema: TestSchema;
  let server: RunningServer;

  beforeAll(async () => {
    schema = await createTestSchema();
    const config = testConfig({
      DATABASE_URL: schema.url,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TASK_QUEUE_PREFIX: `health-${uniqueSuffix()}-`,
      PORT: String(await freePort()),
    });
    server = await startServer(config, silentLogger(), { role: 'api' });
  });
  afterAll(async () => {
    await server?.stop();
    await schema?.drop();
  });

  it.each(['/v1/health/', '/v1/health'])('answers GET %s with status ok and the version', async (path) => {
    const res = await fetch(`${server.url}${path}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', version: LETTA_API_VERSION, server_version: version });
  });

  it('keeps an idle connection open longer than clients do, so that they close it first', async () => {
    const res = await fetch(`${server.url}/v1/health/`);
    await res.body?.cancel();
    // HTTP_KEEP_ALIVE_TIMEOUT_MS's default, in seconds: Node's fetch closes an idle socket well before.
    expect(res.headers.get('keep-alive')).toBe('timeout=65');
  });

  it('answers unknown routes with a JSON 404 in Letta shape', async () => {
    const res = await fetch(`${server.url}/v1/no-such-thing`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: 'Not Found' });
  });

  it('answers a malformed JSON body with 422, telling the client not to retry', async () => {
    const res = await fetch(`${server.url}/v1/health`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{not json',
    });
    expect(res.status).toBe(422);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const body = (await res.json()) as { detail: { type: string }[] };
    expect(body.detail[0].type).toBe('json_invalid');
  });
});

describe('health when a dependency is down', () => {
  it('is 503 and names the database when PostgreSQL does not answer', async () => {
    // Port 1: nothing listens there, ever (a free port could be taken meanwhile, by this test's own server).
    const db = connectPostgres('postgres://root@127.0.0.1:1/test');
    const schema = await createTestSchema();
    const server = await startServer(
      testConfig({
        DATABASE_URL: schema.url,
        TEMPORAL_ADDRESS: testTemporalAddress(),
        PORT: String(await freePort()),
      }),
      silentLogger(),
      { role: 'api' },
    );
    const app = express().use(healthRouter({ db, temporal: server.connection, timeoutMs: 2_000 }).router);
    const http = app.listen(0, '127.0.0.1');
    try {
      await new Promise((resolve) => http.once('listening', resolve));
      const { port: apiPort } = http.address() as { port: number };
      const res = await fetch(`http://127.0.0.1:${apiPort}/v1/health/`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { status: string; checks: Record<string, string> };
      expect(body.status).toBe('unavailable');
      expect(body.checks.temporal).toBe('ok');
      expect(body.checks.database).toMatch(/ECONNREFUSED/);
    } finally {
      http.close();
      await db.close();
      await server.stop();
      await schema.drop();
    }
  });
});
