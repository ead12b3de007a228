import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import Letta from '@letta-ai/letta-client';
import { startOpenAiStub } from './helpers/openai-stub';
import { freePortBelowEphemeral, testTemporalAddress } from './helpers/env';
import { createTestSchema } from './helpers/postgres';
import {
  isAlive,
  processesInGroup,
  processesMentioning,
  startProcess,
  waitForStatus,
  type StartedProcess,
} from './helpers/process';

const main = ['dist/src/main.js'];

async function ports() {
  return {
    PORT: String(await freePortBelowEphemeral()),
    TEMPORAL_PORT: String(await freePortBelowEphemeral()),
    TEMPORAL_UI_PORT: String(await freePortBelowEphemeral()),
  };
}

async function stopAndWait(proc: StartedProcess, signal: NodeJS.Signals, target: 'group' | 'process') {
  process.kill(target === 'group' ? -proc.child.pid! : proc.child.pid!, signal);
  return proc.exited;
}

describe('starting the server as a user does', () => {
  let dataDir: string;

  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-start-'));
  });
  afterEach(() => {
    for (const pid of processesMentioning(dataDir)) process.kill(pid, 'SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('`npm start` with nothing configured comes up healthy, serves the Temporal UI, and Ctrl-C leaves nothing behind', async () => {
    const env = { DATA_DIR: dataDir, ...(await ports()) };
    const proc = startProcess('npm', ['start'], env);
    // `npm start` builds first: on a loaded CI machine that alone can take a minute or two.
    await waitForStatus(`http://127.0.0.1:${env.PORT}/v1/health/`, 200, proc, 240_000);
    const ui = await fetch(`http://127.0.0.1:${env.TEMPORAL_UI_PORT}/`);
    expect(ui.status).toBe(200);
    expect(proc.output()).toContain('using the embedded PGlite database');
    const temporalPid = Number(fs.readFileSync(path.join(dataDir, 'temporal.pid'), 'utf8'));
    expect(isAlive(temporalPid)).toBe(true);

    // Ctrl-C in a terminal signals the whole foreground process group.
    await stopAndWait(proc, 'SIGINT', 'group');
    expect(proc.output()).toContain('"msg":"stopped"');
    expect(isAlive(temporalPid)).toBe(false);
    expect(processesInGroup(proc.child.pid!)).toEqual([]);
    expect(processesMentioning(dataDir)).toEqual([]);

    // The same DATA_DIR again: the Temporal history and the database are reused, not recreated.
    const again = startProcess('node', main, env);
    await waitForStatus(`http://127.0.0.1:${env.PORT}/v1/health/`, 200, again, 60_000);
    expect(again.output()).toContain('database schema is current');
    const secondTemporalPid = Number(fs.readFileSync(path.join(dataDir, 'temporal.pid'), 'utf8'));
    // SIGTERM to the server process alone (as a service manager sends it) still stops its Temporal child.
    expect(await stopAndWait(again, 'SIGTERM', 'process')).toBe(0);
    expect(isAlive(secondTemporalPid)).toBe(false);
    expect(processesMentioning(dataDir)).toEqual([]);
  }, 360_000);

  it('uses DATABASE_URL and TEMPORAL_ADDRESS when they are set, starting no Temporal of its own', async () => {
    const schema = await createTestSchema();
    try {
      const env = {
        DATA_DIR: dataDir,
        DATABASE_URL: schema.url,
        TEMPORAL_ADDRESS: testTemporalAddress(),
        ...(await ports()),
      };
      const proc = startProcess('node', main, env);
      await waitForStatus(`http://127.0.0.1:${env.PORT}/v1/health`, 200, proc, 60_000);
      expect(proc.output()).toContain('Temporal: connecting to TEMPORAL_ADDRESS');
      expect(proc.output()).toContain('using PostgreSQL from DATABASE_URL');
      expect(fs.existsSync(path.join(dataDir, 'temporal.pid'))).toBe(false);
      expect(fs.existsSync(path.join(dataDir, 'pgdata'))).toBe(false);
      const client = new pg.Client({ connectionString: schema.url });
      await client.connect();
      const { rows } = await client.query('SELECT version FROM schema_migrations');
      await client.end();
      expect(rows.length).toBeGreaterThan(0);
      expect(await stopAndWait(proc, 'SIGTERM', 'process')).toBe(0);
    } finally {
      await schema.drop();
    }
  });

  it('takes the first message sent the moment a fresh server reports healthy', async () => {
    const schema = await createTestSchema();
    const stub = await startOpenAiStub();
    try {
      const env = {
        DATA_DIR: dataDir,
        DATABASE_URL: schema.url,
        OPENAI_BASE_URL: stub.baseURL,
        OPENAI_API_KEY: 'test-key',
        ...(await ports()),
      };
      const proc = startProcess('node', main, env);
      const url = `http://127.0.0.1:${env.PORT}`;
      await waitForStatus(`${url}/v1/health/`, 200, proc, 120_000);
      const client = new Letta({ baseURL: url, apiKey: 'unused', maxRetries: 0 });
      const agent = await client.agents.create({ model: 'openai/gpt-4o-mini' });
      stub.enqueue({ text: 'Ready.' });
      const response = await client.agents.messages.create(agent.id, {
        messages: [{ role: 'user', content: 'Are you there?' }],
      });
      expect(response.messages.at(-1)).toMatchObject({ content: 'Ready.' });
      expect(await stopAndWait(proc, 'SIGTERM', 'process')).toBe(0);
    } finally {
      await stub.close();
      await schema.drop();
    }
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT="abc"'],
    [{ TEMPORAL_ADDRESS: 'nowhere' }, 'TEMPORAL_ADDRESS="nowhere"'],
  ])('refuses a bad setting %j with one line naming it', async (bad, expected) => {
    const proc = startProcess('node', main, { DATA_DIR: dataDir, ...bad });
    expect(await proc.exited).toBe(2);
    const lines = proc.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(expected);
  });

  it('refuses to run the worker alone on the embedded database', async () => {
    const proc = startProcess('node', [...main, '--role=worker'], { DATA_DIR: dataDir });
    expect(await proc.exited).toBe(2);
    expect(proc.output()).toContain('--role=worker needs DATABASE_URL and TEMPORAL_ADDRESS');
  });
});
