/**
 * Where a sandboxed call runs (LOCAL_TOOL_CALLS) and where a model call runs (LOCAL_MODEL_CALLS): as
 * regular activities by default (on the turn's own task queue, where its worker takes them eagerly; a
 * mode with a pool of its own: test/tool-worker-pools.test.ts), or, switched on, as local activities of
 * the turn's worker, as the turn's history shows.
 */
import { useAgentServer, type AgentServer } from './helpers/agent-server';
import {
  connectTemporalClient,
  finishedTurnHistory,
  localActivityTypes,
  turnWorkflowId,
  type HistoryEvent,
} from './helpers/temporal';

const PING =
  'def ping(n: int) -> int:\n    """Returns n.\n\n    Args:\n        n: a number\n    """\n    return n * 2\n';

/** One turn whose model calls the Python tool `ping` once: its tool return and its whole history. */
async function pingTurn(h: AgentServer<'openai'>) {
  const tool = await h.client.tools.create({ source_code: PING });
  const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
  h.stub.enqueue({ toolCalls: [{ name: 'ping', arguments: { n: 21 } }] }, { text: 'Done.' });
  const response = await h.client.agents.messages.create(agent.id, {
    messages: [{ role: 'user', content: 'Ping' }],
  });
  const temporal = await connectTemporalClient();
  try {
    const workflowId = await turnWorkflowId(h.server.db, response.messages[0].run_id!);
    return {
      toolReturn: response.messages.find((m) => m.message_type === 'tool_return_message'),
      events: await finishedTurnHistory(temporal.client, workflowId),
    };
  } finally {
    await temporal.close();
  }
}

const scheduledOn = (events: HistoryEvent[]) =>
  events
    .map((e) => e.activityTaskScheduledEventAttributes)
    .filter((a) => a)
    .map((a) => ({ type: a!.activityType!.name!, queue: a!.taskQueue!.name! }));

describe('model and sandboxed calls as regular activities (the default)', () => {
  const h = useAgentServer('openai');

  it('schedules the model calls and the sandboxed call on the turn’s own task queue', async () => {
    const { toolReturn, events } = await pingTurn(h);
    expect(toolReturn).toMatchObject({ status: 'success', tool_return: '42' });
    expect(localActivityTypes(events)).toEqual([]);
    expect(scheduledOn(events)).toEqual([
      { type: 'callModel', queue: h.server.turns.taskQueues.agent },
      { type: 'runSandboxTool', queue: h.server.turns.taskQueues.agent },
      { type: 'callModel', queue: h.server.turns.taskQueues.agent },
    ]);
  });
});

describe('model calls as local activities (LOCAL_MODEL_CALLS=true)', () => {
  const h = useAgentServer('openai', { LOCAL_MODEL_CALLS: 'true' });

  it('runs each model call in the turn’s own worker, the sandboxed call still a regular activity', async () => {
    const { toolReturn, events } = await pingTurn(h);
    expect(toolReturn).toMatchObject({ status: 'success', tool_return: '42' });
    expect(localActivityTypes(events)).toEqual(['callModel', 'callModel']);
    expect(scheduledOn(events)).toEqual([{ type: 'runSandboxTool', queue: h.server.turns.taskQueues.agent }]);
  });
});

describe('sandboxed calls as local activities (LOCAL_TOOL_CALLS=true)', () => {
  const h = useAgentServer('openai', { LOCAL_TOOL_CALLS: 'true' });

  it('runs the call in the turn’s own worker: a marker in its history, no activity scheduled', async () => {
    const { toolReturn, events } = await pingTurn(h);
    expect(toolReturn).toMatchObject({ status: 'success', tool_return: '42' });
    expect(localActivityTypes(events)).toEqual(['runSandboxTool']);
    expect(scheduledOn(events).map((a) => a.type)).toEqual(['callModel', 'callModel']);
  });
});
