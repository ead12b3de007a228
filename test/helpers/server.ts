import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../../src/logger';
import { startServer, type RunningServer } from '../../src/server';
import { freePort, silentLogger, testConfig, testTemporalAddress, uniqueSuffix } from './env';
import { createTestSchema } from './postgres';

export interface TestServer extends RunningServer {
  url: string;
  stopAll(): Promise<void>;
}

/**
 * Where a test server keeps its data: a fresh PostgreSQL schema, or (the server's default) the
 * embedded PGlite in a fresh DATA_DIR.
 */
export type TestDatabase = 'postgres' | 'pglite';

async function freshDatabase(
  kind: TestDatabase,
): Promise<{ env: Record<string, string>; drop: () => Promise<void> }> {
  if (kind === 'postgres') {
    const schema = await createTestSchema();
    return { env: { DATABASE_URL: schema.url }, drop: () => schema.drop() };
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-data-'));
  return {
    env: { DATA_DIR: dataDir },
    drop: async () => fs.rmSync(dataDir, { recursive: true, force: true }),
  };
}

/**
 * The whole server in this process, on the run's Temporal server and a fresh database, with its own
 * task queues (test files share the Temporal server).
 */
export async function startTestServer(
  env: Record<string, string> = {},
  log: Logger = silentLogger(),
  database: TestDatabase = 'postgres',
): Promise<TestServer> {
  const data = await freshDatabase(database);
  const server = await startServer(
    testConfig({
      ...data.env,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TASK_QUEUE_PREFIX: `t-${uniqueSuffix()}-`,
      PORT: String(await freePort()),
      MODEL_RETRY_INITIAL_MS: '100',
      ...env,
    }),
    log,
  );
  return {
    ...server,
    url: server.url!,
    stopAll: async () => {
      await server.stop();
      await data.drop();
    },
  };
}
