import { Client } from '@temporalio/client';
import { startServer, type RunningServer } from '../src/server';
import { taskQueues } from '../src/temporal/task-queues';
import { loadDeploymentId } from '../src/db/deployment';
import { smokeActivities } from './fixtures/smoke-activities';
import { smokeWorkflow } from './fixtures/smoke-workflow';
import { freePort, silentLogger, testConfig, testTemporalAddress, uniqueSuffix } from './helpers/env';
import { createTestSchema, type TestSchema } from './helpers/postgres';

describe('a workflow with an activity, on the real Temporal server and PostgreSQL', () => {
  let schema: TestSchema;
  let server: RunningServer;
  const prefix = `smoke-${uniqueSuffix()}-`;

  beforeAll(async () => {
    schema = await createTestSchema();
    const config = testConfig({
      DATABASE_URL: schema.url,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TASK_QUEUE_PREFIX: prefix,
      PORT: String(await freePort()),
    });
    server = await startServer(config, silentLogger(), {
      workflowsPath: require.resolve('./fixtures/smoke-workflow'),
      activities: ({ db }) => smokeActivities(db),
    });
  });
  afterAll(async () => {
    await server?.stop();
    await schema?.drop();
  });

  it('runs end to end through the server worker', async () => {
    const client = new Client({ connection: server.connection });
    const [{ value: instanceId }] = await server.db.query<{ value: string }>(
      "SELECT value FROM server_metadata WHERE key = 'instance_id'",
    );
    const result = await client.workflow.execute(smokeWorkflow, {
      taskQueue: taskQueues(prefix, await loadDeploymentId(server.db)).agent,
      workflowId: `smoke-${uniqueSuffix()}`,
      args: ['hello'],
    });
    expect(result).toBe(`hello from ${instanceId}`);
  });
});
