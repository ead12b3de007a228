import { APIError } from '@letta-ai/letta-client';
import { useAgentServer } from './helpers/agent-server';
import { clientToolReturn } from './helpers/approvals';
import { eventually } from './helpers/eventually';
import { continueAsNewChain, startInput, turnWorkflowId } from './helpers/temporal';
import type { AgentTurnInput } from '../contracts/payloads';

/**
 * What could pass one of Temporal's limits is refused before a turn starts, with a 4xx in Letta's
 * shape; and a turn whose workflow ends anyway (terminated in the Temporal UI) is no 500 for the
 * answer that finds it gone.
 */
describe("a turn within Temporal's limits", () => {
  const h = useAgentServer('openai', { TURN_CONTEXT_MAX_BYTES: '4096' });
  const ASK_USER = { name: 'ask_user', parameters: { type: 'object', properties: {} } };
  /** A rule whose prompt makes the agent's tools and rules longer than the server takes. */
  const longRule = {
    type: 'continue_loop' as const,
    tool_name: 'memory_insert',
    prompt_template: 'Keep going. '.repeat(400),
  };

  /** An agent whose turn is paused on ask_user, the model to reply `then` once answered. */
  const pausedAgent = async (then: string) => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    h.stub.enqueue({ toolCalls: [{ name: 'ask_user', arguments: {} }] }, { text: then });
    const paused = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Ask me' }],
      client_tools: [ASK_USER],
    });
    const call = (paused.messages.at(-1) as { tool_call: { tool_call_id: string } }).tool_call;
    const answer = () =>
      h.client.agents.messages.create(agent.id, {
        messages: [clientToolReturn(call.tool_call_id, 'yes')],
        client_tools: [ASK_USER],
      });
    return { agent, runId: paused.messages[0].run_id!, call, answer };
  };

  const refusal = async (request: Promise<unknown>) => {
    const error = await request.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(APIError);
    return error as APIError;
  };

  it("refuses a message to an agent whose tools and rules would not fit a turn's payloads (400), storing nothing", async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_rules: [longRule] });
    const error = await refusal(
      h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: 'Hi' }] }),
    );
    expect(error.status).toBe(400);
    expect((error.error as { detail: string }).detail).toMatch(
      /^The agent's tools and tool rules come to \d+ bytes as a turn carries them, more than TURN_CONTEXT_MAX_BYTES \(4096\)/,
    );
    expect((await h.client.runs.list({ agent_id: agent.id })).getPaginatedItems()).toEqual([]);
    // Within the limit again, the agent answers.
    await h.client.agents.update(agent.id, { tool_rules: [] });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(response.stop_reason.stop_reason).toBe('end_turn');
  });

  it('refuses an answer when the agent grew past the limit while paused (400), and takes it once it fits', async () => {
    const { agent, answer } = await pausedAgent('Thanks.');
    await h.client.agents.update(agent.id, { tool_rules: [longRule] });
    const error = await refusal(answer());
    expect(error.status).toBe(400);
    expect((error.error as { detail: string }).detail).toContain('TURN_CONTEXT_MAX_BYTES (4096)');
    await h.client.agents.update(agent.id, { tool_rules: [] });
    const answered = await answer();
    expect(answered.stop_reason.stop_reason).toBe('end_turn');
    expect(answered.messages.at(-1)).toMatchObject({ content: 'Thanks.' });
  });

  it('takes a paused turn whose workflow was terminated up from its pause when its answer comes', async () => {
    const { agent, runId, call, answer } = await pausedAgent('Back again.');
    const workflowId = await turnWorkflowId(h.server.db, runId);
    const handle = h.server.turns.temporal.workflow.getHandle(workflowId);
    await eventually(
      async () => (await handle.describe()).historyLength,
      (length) => length > 5,
    );
    await handle.terminate('an operator ended it in the Temporal UI');

    const answered = await answer();
    expect(answered.stop_reason.stop_reason).toBe('end_turn');
    expect(answered.messages.at(-1)).toMatchObject({ content: 'Back again.' });
    const chain = await continueAsNewChain(h.server.turns.temporal, workflowId);
    const resumed = startInput<AgentTurnInput>(chain[0].events);
    expect(resumed).toMatchObject({ runId, continued: { pause: { calls: [{ id: call.tool_call_id }] } } });
    const { searchAttributes } = await handle.describe();
    expect(searchAttributes).toMatchObject({ LettaAgentId: [agent.id], LettaRunId: [runId] });
    // The conversation goes on as before.
    const next = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(next.stop_reason.stop_reason).toBe('end_turn');
  });
});
