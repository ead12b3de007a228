import { useAgentServer } from './helpers/agent-server';
import { connectTemporalClient, stepWorkflowId } from './helpers/temporal';

const ASK_USER = {
  name: 'ask_user',
  description: 'Asks the user',
  parameters: { type: 'object', properties: {} },
};

/**
 * The Temporal UI's Stack Trace tab is the `__stack_trace` query, which the SDK answers from a promise
 * hook in its workflow threads; the agent worker leaves the hook out unless WORKFLOW_STACK_TRACES
 * (src/temporal/worker.ts, patches/).
 */
describe.each<{ setting: string; env: Record<string, string>; traced: boolean }>([
  { setting: 'unset', env: {}, traced: false },
  { setting: 'true', env: { WORKFLOW_STACK_TRACES: 'true' }, traced: true },
])('a paused step’s stack trace with WORKFLOW_STACK_TRACES $setting', ({ env, traced }) => {
  const h = useAgentServer('openai', env);

  it(traced ? 'names where the step waits' : 'is refused: the hook is left out', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', include_base_tools: false });
    h.stub.enqueue({ toolCalls: [{ name: ASK_USER.name, arguments: {} }] });
    const paused = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Ask me.' }],
      client_tools: [ASK_USER],
    });
    expect(paused.stop_reason.stop_reason).toBe('requires_approval');
    const workflowId = await stepWorkflowId(h.server.db, paused.messages[0].run_id!);
    const temporal = await connectTemporalClient();
    try {
      const query = temporal.client.workflow.getHandle(workflowId).query<string>('__stack_trace');
      if (traced) await expect(query).resolves.toContain('waitForAnswer');
      else await expect(query).rejects.toThrow(/stack traces are not enabled/);
    } finally {
      await temporal.close();
    }
  });
});
