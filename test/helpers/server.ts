import type { Logger } from '../../src/logger';
import { startServer, type RunningServer } from '../../src/server';
import { freePort, silentLogger, testConfig, testTemporalAddress, uniqueSuffix } from './env';
import { createTestSchema, type TestSchema } from './postgres';

export interface TestServer extends RunningServer {
  url: string;
  stopAll(): Promise<void>;
}

/**
 * The whole server in this process, on the run's Temporal server and a fresh PostgreSQL schema, with its
 * own task queues (test files share the Temporal server).
 */
export async function startTestServer(
  env: Record<string, string> = {},
  log: Logger = silentLogger(),
): Promise<TestServer> {
  const schema: TestSchema = await createTestSchema();
  const server = await startServer(
    testConfig({
      DATABASE_URL: schema.url,
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
      await schema.drop();
    },
  };
}
