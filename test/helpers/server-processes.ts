import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, testTemporalAddress, uniqueSuffix } from './env';
import { startOpenAiStub, type OpenAiStub } from './openai-stub';
import { createTestSchema, type TestSchema } from './postgres';
import { startProcess, waitForStatus, type StartedProcess } from './process';

/**
 * The server split as in production (`npm run api`, `npm run worker`): separate processes of the
 * built code on an external Temporal and PostgreSQL, with a model endpoint of the test's.
 */
export async function serverProcessEnv(options: {
  dataDir: string;
  /** PostgreSQL; none runs the server on the embedded PGlite in `dataDir`. */
  databaseUrl?: string;
  temporalAddress: string;
  openAiBaseUrl: string;
  extra?: Record<string, string>;
}): Promise<Record<string, string>> {
  return {
    DATA_DIR: options.dataDir,
    ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
    TEMPORAL_ADDRESS: options.temporalAddress,
    TASK_QUEUE_PREFIX: `p-${uniqueSuffix()}-`,
    PORT: String(await freePort()),
    OPENAI_BASE_URL: options.openAiBaseUrl,
    OPENAI_API_KEY: 'test-key',
    ...options.extra,
  };
}

/**
 * What server processes of a test run on: a data folder, a database schema and a model stub of its
 * own, on the suite's Temporal server; `close` removes them.
 */
export async function processTestBed(
  name: string,
  extra?: Record<string, string>,
): Promise<{ stub: OpenAiStub; schema: TestSchema; env: Record<string, string>; close(): Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `letta-${name}-`));
  const schema = await createTestSchema();
  const stub = await startOpenAiStub();
  const env = await serverProcessEnv({
    dataDir,
    databaseUrl: schema.url,
    temporalAddress: testTemporalAddress(),
    openAiBaseUrl: stub.baseURL,
    extra,
  });
  return {
    stub,
    schema,
    env,
    close: async () => {
      await stub.close();
      await schema.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const apiUrl = (env: Record<string, string>) => `http://127.0.0.1:${env.PORT}`;

/** The API alone (`--role=api`), or with the workers in the same process (`all`, as `npm start` runs). */
export async function startApiProcess(
  env: Record<string, string>,
  role: 'api' | 'all' = 'api',
): Promise<StartedProcess> {
  const api = startProcess('node', ['dist/src/main.js', `--role=${role}`], env);
  await waitForStatus(`${apiUrl(env)}/v1/health/`, 200, api, 60_000);
  return api;
}

/** A worker process (`--role=worker`, or a tool pool's `tools`), once its workers poll. */
export async function startWorkerProcess(
  env: Record<string, string>,
  role: 'worker' | 'tools' = 'worker',
): Promise<StartedProcess> {
  const worker = startProcess('node', ['dist/src/main.js', `--role=${role}`], env);
  const deadline = Date.now() + 60_000;
  while (!worker.output().includes('worker polling')) {
    if (worker.child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`the worker did not start:\n${worker.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return worker;
}

/** Signals the process's whole group (it was started detached) and waits for it to exit. */
export async function killProcess(proc: StartedProcess, signal: NodeJS.Signals): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  process.kill(-proc.child.pid!, signal);
  await proc.exited;
}
