/**
 * Tool worker pools (TOOL_WORKER_POOLS, `--role=tools`): a mode with a pool of its own has its calls
 * scheduled on its own task queue, where only `--role=tools` processes poll, so they run there and
 * never on the workers that run turns. (Without a pool, calls run on the turn's queue:
 * test/local-tool-calls.test.ts.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import pg from 'pg';
import { testTemporalAddress } from './helpers/env';
import { startOpenAiStub, type OpenAiStub } from './helpers/openai-stub';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { startProcess, type StartedProcess } from './helpers/process';
import { apiUrl, killProcess, serverProcessEnv, startApiProcess } from './helpers/server-processes';
import { connectTemporalClient, finishedTurnHistory, type HistoryEvent } from './helpers/temporal';

const PING =
  'def ping(n: int) -> int:\n    """Returns n.\n\n    Args:\n        n: a number\n    """\n    return n * 2\n';

/** Starts `--role=tools` and waits for its workers to poll. */
async function startToolsProcess(env: Record<string, string>): Promise<StartedProcess> {
  const tools = startProcess('node', ['dist/src/main.js', '--role=tools'], env);
  const deadline = Date.now() + 60_000;
  while (!tools.output().includes('worker polling')) {
    if (tools.child.exitCode !== null || Date.now() > deadline)
      throw new Error(`the tools process did not start:\n${tools.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return tools;
}

/** The sandboxed call's scheduling and start: its queue, and the worker identity that took it. */
function sandboxedCall(events: HistoryEvent[]) {
  const scheduled = events.find(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runSandboxTool',
  );
  const started = events.find(
    (e) =>
      e.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === scheduled?.eventId?.toString(),
  );
  return {
    queue: scheduled?.activityTaskScheduledEventAttributes?.taskQueue?.name,
    identity: started?.activityTaskStartedEventAttributes?.identity,
  };
}

describe('a sandbox pool of its own (TOOL_WORKER_POOLS=sandbox, --role=tools)', () => {
  let dataDir: string;
  let schema: TestSchema;
  let stub: OpenAiStub;
  let env: Record<string, string>;
  let server: StartedProcess;
  let tools: StartedProcess;
  let client: Letta;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-pools-'));
    schema = await createTestSchema();
    stub = await startOpenAiStub();
    env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: testTemporalAddress(),
      openAiBaseUrl: stub.baseURL,
      extra: { TOOL_WORKER_POOLS: 'sandbox' },
    });
    server = await startApiProcess(env, 'all');
    tools = await startToolsProcess(env);
    client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => {
    if (server) await killProcess(server, 'SIGKILL');
    if (tools) await killProcess(tools, 'SIGKILL');
    await stub?.close();
    await schema?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs the sandboxed call on tools-sandbox, in the tools process alone', async () => {
    const tool = await client.tools.create({ source_code: PING });
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
    stub.enqueue({ toolCalls: [{ name: 'ping', arguments: { n: 21 } }] }, { text: 'Done.' });
    const response = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Ping' }],
    });
    expect(response.messages.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'success',
      tool_return: '42',
    });

    const db = new pg.Client({ connectionString: schema.url });
    await db.connect();
    const [{ workflow_id: workflowId }] = (
      await db.query<{ workflow_id: string }>('SELECT workflow_id FROM runs WHERE id = $1', [
        response.messages[0].run_id,
      ])
    ).rows;
    await db.end();
    const temporal = await connectTemporalClient();
    try {
      const call = sandboxedCall(await finishedTurnHistory(temporal.client, workflowId));
      expect(call.queue).toMatch(new RegExp(`^${env.TASK_QUEUE_PREFIX}[^.]+\\.tools-sandbox$`));
      expect(call.identity).toMatch(new RegExp(`^${tools.child.pid}@`));
    } finally {
      await temporal.close();
    }
  });

  it('refuses --role=tools when TOOL_WORKER_POOLS names no pool', async () => {
    const refused = startProcess('node', ['dist/src/main.js', '--role=tools'], {
      ...env,
      TOOL_WORKER_POOLS: '',
    });
    await refused.exited;
    expect(refused.child.exitCode).toBe(2);
    expect(refused.output()).toContain('--role=tools serves the pools TOOL_WORKER_POOLS names');
  });
});
