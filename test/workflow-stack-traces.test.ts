import { useAgentServer } from './helpers/agent-server';
import { connectTemporalClient, turnWorkflowId } from './helpers/temporal';

const ASK_USER = {
  name: 'ask_user',
  description: 'Asks the user',
  parameters: { type: 'object', properties: {} },
};

/**
 * The Temporal UI's Stack Trace tab is the `__stack_trace` query, which the SDK answers from the promise
 * hook of its workflow threads: on by default, as the worker runs workflows as the SDK does.
 */
describe('a paused turn’s stack trace, on defaults', () => {
  const h = useAgentServer('openai');

  it('names where the turn waits', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', include_base_tools: false });
    h.stub.enqueue({ toolCalls: [{ name: ASK_USER.name, arguments: {} }] });
    const paused = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Ask me.' }],
      client_tools: [ASK_USER],
    });
    expect(paused.stop_reason.stop_reason).toBe('requires_approval');
    const workflowId = await turnWorkflowId(h.server.db, paused.messages[0].run_id!);
    const temporal = await connectTemporalClient();
    try {
      const query = temporal.client.workflow.getHandle(workflowId).query<string>('__stack_trace');
      await expect(query).resolves.toContain('waitForAnswer');
    } finally {
      await temporal.close();
    }
  });
});
