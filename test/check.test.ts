/**
 * What a newcomer sees: `npm start -- --check` names each missing dependency with its fix and exits 0
 * only when nothing is missing; a server started on a terminal prints a banner of where everything is.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startOpenAiStub, type OpenAiStub } from './helpers/openai-stub';
import { freePort, testTemporalAddress } from './helpers/env';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { startModalServer, type ModalServer } from './helpers/modal-server';
import { startProcess, waitForStatus } from './helpers/process';
import { modalUnsupportedReason } from '../src/sandbox/modal-support';

const main = 'dist/src/main.js';

describe('npm start -- --check', () => {
  let stub: OpenAiStub;
  let schema: TestSchema;
  let dataDir: string;
  beforeAll(async () => {
    stub = await startOpenAiStub();
    schema = await createTestSchema();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-check-'));
  });
  afterAll(async () => {
    await stub.close();
    await schema.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const check = async (env: Record<string, string>) => {
    const proc = startProcess('node', [main, '--check'], { DATA_DIR: dataDir, ...env });
    return { code: await proc.exited, output: proc.output() };
  };

  it('exits 0 and says so when nothing is missing', async () => {
    const { code, output } = await check({
      DATABASE_URL: schema.url,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      PORT: String(await freePort()),
      OPENAI_BASE_URL: stub.baseURL,
      OPENAI_API_KEY: 'test-key',
    });
    expect(output).toContain('✓ Node.js');
    expect(output).toContain('✓ python3');
    expect(output).toContain('✓ sandbox: local (bubblewrap');
    expect(output).toContain('✓ database: PostgreSQL at DATABASE_URL answers');
    expect(output).toContain(`✓ model provider openai (${stub.baseURL}): answers with its key`);
    expect(output).not.toContain('✗');
    expect(output).toContain('everything the server needs is here');
    expect(code).toBe(0);
  }, 60_000);

  it('names every missing dependency with its fix, and exits 1', async () => {
    const taken = net.createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => taken.once('listening', resolve));
    try {
      const { code, output } = await check({
        PYTHON_PATH: '/nonexistent/python3',
        DATABASE_URL: 'postgres://root@127.0.0.1:1/none',
        TEMPORAL_ADDRESS: testTemporalAddress(),
        PORT: String((taken.address() as net.AddressInfo).port),
      });
      expect(output).toMatch(/✗ python3: \/nonexistent\/python3 does not run.*\n\s+→ install python3/);
      expect(output).toMatch(/✗ database: .*\n\s+→ start PostgreSQL, or correct DATABASE_URL/);
      expect(output).toMatch(/✗ port \d+: PORT \d+ is taken .*\n\s+→ stop what listens there, or set PORT/);
      expect(output).toMatch(
        /✗ model providers: none configured.*\n\s+→ set OPENAI_API_KEY or ANTHROPIC_API_KEY/,
      );
      expect(output).toContain('4 problems to fix');
      expect(code).toBe(1);
    } finally {
      taken.close();
    }
  }, 60_000);

  it('while the server runs on its defaults, says its ports are in use by it rather than a problem, and exits 0', async () => {
    const env = {
      DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'letta-check-running-')),
      PORT: String(await freePort()),
      TEMPORAL_PORT: String(await freePort()),
      TEMPORAL_UI_PORT: String(await freePort()),
      OPENAI_BASE_URL: stub.baseURL,
      OPENAI_API_KEY: 'test-key',
    };
    // The embedded PGlite in DATA_DIR, and its own embedded Temporal on the two ports.
    const server = startProcess('node', [main], env);
    try {
      await waitForStatus(`http://127.0.0.1:${env.PORT}/v1/health/`, 200, server, 120_000);
      // A default start is quiet: webpack's report of the workflow bundle is a debug line, and the
      // secrets key beside the embedded database needs no word.
      expect(server.output()).toContain('using the embedded PGlite database');
      expect(server.output()).not.toContain('workflow-bundle');
      expect(server.output()).not.toContain('Workflow bundle created');
      expect(server.output()).not.toContain('SECRETS_KEY');
      const { code, output } = await check(env);
      expect(output).toMatch(
        new RegExp(`• port ${env.PORT}: PORT ${env.PORT} is in use by this server, running \\(version `),
      );
      expect(output).toContain(
        `• port ${env.TEMPORAL_PORT}: TEMPORAL_PORT ${env.TEMPORAL_PORT} is in use, probably by the running server's embedded Temporal`,
      );
      expect(output).toContain(`• port ${env.TEMPORAL_UI_PORT}: TEMPORAL_UI_PORT`);
      expect(output).not.toContain('✗');
      expect(code).toBe(0);
    } finally {
      process.kill(server.child.pid!, 'SIGTERM');
      await server.exited;
      fs.rmSync(env.DATA_DIR, { recursive: true, force: true });
    }
  }, 180_000);

  it('says when a model endpoint refuses its key', async () => {
    const { code, output } = await check({
      DATABASE_URL: schema.url,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      PORT: String(await freePort()),
      OPENAI_BASE_URL: 'http://127.0.0.1:1/v1',
      OPENAI_API_KEY: 'test-key',
    });
    expect(output).toMatch(
      /✗ model provider openai \(http:\/\/127\.0\.0\.1:1\/v1\): .*\n\s+→ check OPENAI_API_KEY/,
    );
    expect(code).toBe(1);
  }, 60_000);
});

describe('npm start -- --check with Modal credentials', () => {
  let modal: ModalServer;
  beforeAll(async () => (modal = await startModalServer()));
  afterAll(() => modal.close());

  const check = async (env: Record<string, string>) => {
    const proc = startProcess('node', [main, '--check'], {
      DATA_DIR: os.tmpdir(),
      DATABASE_URL: 'postgres://root@127.0.0.1:1/none',
      TEMPORAL_ADDRESS: testTemporalAddress(),
      ...modal.env,
      ...env,
    });
    await proc.exited;
    return proc.output();
  };

  if (modalUnsupportedReason()) {
    it('says Modal needs a newer Node, and how to get one', async () => {
      expect(await check({})).toMatch(
        /✗ Modal: Modal sandboxes need Node 22 or later; this server runs Node 20.*\n\s+→ run the server on Node 22 or 24/,
      );
    }, 60_000);
  } else {
    it("asks Modal's API with the token, and says when it is refused", async () => {
      expect(await check({})).toContain('✓ Modal: app letta-tools answers with the token');
      expect(await check({ MODAL_TOKEN_SECRET: 'wrong' })).toMatch(
        /✗ Modal: .*\n\s+→ check MODAL_TOKEN_ID and MODAL_TOKEN_SECRET/,
      );
    }, 60_000);
  }
});

describe('the start-up banner', () => {
  it('shows, on a terminal, where the API, its reference and the Temporal UI are, and what is missing', async () => {
    const schema = await createTestSchema();
    const port = await freePort();
    const proc = startProcess('node', [main], {
      LOG_FORMAT: 'pretty', // what LOG_FORMAT=auto chooses on a terminal
      DATABASE_URL: schema.url,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      PORT: String(port),
    });
    try {
      await waitForStatus(`http://127.0.0.1:${port}/v1/health/`, 200, proc, 60_000);
      const banner = await (async () => {
        for (let i = 0; i < 100 && !proc.output().includes('password'); i++)
          await new Promise((resolve) => setTimeout(resolve, 100));
        return proc.output();
      })();
      expect(banner).toContain('letta-temporal is ready');
      expect(banner).toContain(`API            http://127.0.0.1:${port}\n`);
      expect(banner).toContain(`API reference  http://127.0.0.1:${port}/docs`);
      expect(banner).toMatch(/models .*none configured\n\s+→ set OPENAI_API_KEY or ANTHROPIC_API_KEY/);
      expect(banner).toMatch(/sandbox .*✓.* local \(bubblewrap/);
      expect(banner).toContain('password       none: the API answers on loopback only');
      expect(banner).not.toContain('"msg"'); // readable lines, not JSON
    } finally {
      process.kill(proc.child.pid!, 'SIGTERM');
      await proc.exited;
      await schema.drop();
    }
  }, 120_000);
});
