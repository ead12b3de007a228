/**
 * Tool worker pools (TOOL_WORKER_POOLS, `--role=tools`): a mode with a pool of its own has its calls
 * scheduled on its own task queue, where only `--role=tools` processes poll, so they run there and
 * never on the workers that run turns. (Without a pool, calls run on the turn's queue:
 * test/local-tool-calls.test.ts.)
 */
import Letta from '@letta-ai/letta-client';
import pg from 'pg';
import { startProcess, type StartedProcess } from './helpers/process';
import {
  apiUrl,
  killProcess,
  processTestBed,
  startApiProcess,
  startWorkerProcess,
} from './helpers/server-processes';
import { connectTemporalClient, finishedTurnHistory, type HistoryEvent } from './helpers/temporal';

const PING =
  'def ping(n: int) -> int:\n    """Returns n.\n\n    Args:\n        n: a number\n    """\n    return n * 2\n';

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
  let bed: Awaited<ReturnType<typeof processTestBed>>;
  let env: Record<string, string>;
  let server: StartedProcess;
  let tools: StartedProcess;
  let client: Letta;

  beforeAll(async () => {
    bed = await processTestBed('pools', { TOOL_WORKER_POOLS: 'sandbox' });
    env = bed.env;
    server = await startApiProcess(env, 'all');
    tools = await startWorkerProcess(env, 'tools');
    client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => {
    if (server) await killProcess(server, 'SIGKILL');
    if (tools) await killProcess(tools, 'SIGKILL');
    await bed?.close();
  });

  it('runs the sandboxed call on tools-sandbox, in the tools process alone', async () => {
    const tool = await client.tools.create({ source_code: PING });
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
    bed.stub.enqueue({ toolCalls: [{ name: 'ping', arguments: { n: 21 } }] }, { text: 'Done.' });
    const response = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Ping' }],
    });
    expect(response.messages.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'success',
      tool_return: '42',
    });

    const db = new pg.Client({ connectionString: bed.schema.url });
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
