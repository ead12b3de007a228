import { useAgentServer } from './helpers/agent-server';
import { toolReturnsOf } from './helpers/tool-returns';
import type { ChatRequest } from './helpers/openai-stub';
import { connectTemporalClient, turnWorkflowId } from './helpers/temporal';
import { eventually } from './helpers/eventually';
import { messageRunId, sendAgentMessage } from '../src/agent/agent-messages';
import { startAgentTurn } from '../src/agent/turns';
import { getRun } from '../src/db/runs';

/** Letta's multi-agent tools: a message to another agent is that agent's own turn, in its session. */
describe('agents messaging agents', () => {
  const h = useAgentServer('openai');
  const agent = (extra: Record<string, unknown> = {}) =>
    // include_multi_agent_tools: Letta's server takes it; this client's types no longer name it.
    h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      ...({ include_multi_agent_tools: true } as object),
      ...extra,
    });

  it('asks another agent and gets its reply, from that agent’s own turn', async () => {
    const [asker, expert] = await Promise.all([agent(), agent({ name: 'expert' })]);
    expect(asker.tools.map((t) => t.name)).toContain('send_message_to_agent_and_wait_for_reply');
    h.stub.enqueue(
      {
        toolCalls: [
          {
            name: 'send_message_to_agent_and_wait_for_reply',
            arguments: { message: 'what is 2+2?', other_agent_id: expert.id },
          },
        ],
      },
      (request) => {
        // The expert's own turn: it is told who asks.
        expect(request.messages.map((m) => String(m.content)).join('\n')).toContain(
          `[Incoming message from agent with ID '${asker.id}' - your response will be delivered to the sender] what is 2+2?`,
        );
        return { text: 'Four.' };
      },
      { text: 'The expert says four.' },
    );
    const response = await h.client.agents.messages.create(asker.id, {
      messages: [{ role: 'user', content: 'ask the expert' }],
    });
    const [reply] = toolReturnsOf(response.messages);
    expect(reply).toMatchObject({
      status: 'success',
      tool_return: `{'agent_id': '${expert.id}', 'response': ['Four.']}`,
    });

    const [run] = (await h.client.runs.list({ agent_id: expert.id })).getPaginatedItems();
    expect(run).toMatchObject({
      status: 'completed',
      metadata: { run_type: 'agent_message', agent_chain: [asker.id] },
    });
    const temporal = await connectTemporalClient();
    try {
      const turn = await temporal.client.workflow
        .getHandle(await turnWorkflowId(h.server.db, run.id))
        .describe();
      expect(turn.status.name).toBe('COMPLETED');
      expect(await turn.staticSummary()).toContain(`${expert.name}: `);
      expect(await turn.staticDetails()).toContain(`**From** agent ${asker.id}`);
    } finally {
      await temporal.close();
    }
  });

  it('sends a call’s message once, however often the call runs again (a retry after a crash)', async () => {
    const [sender, recipient] = await Promise.all([agent(), agent()]);
    h.stub.enqueue({ text: 'noted' });
    const { run } = await startAgentTurn(h.server.turns, {
      agentId: sender.id,
      conversationId: null,
      clientTools: [],
      maxSteps: 1,
      background: true,
      runType: 'test',
      userMessages: [{ role: 'user', text: 'hi' }],
    });
    const message = {
      senderId: sender.id,
      runId: run.id,
      toolCallId: 'call_once',
      text: 'hello',
      wait: false,
    };
    const first = await sendAgentMessage(h.server.turns, message, [recipient.id]);
    const delivered = await eventually(
      () => getRun(h.server.db, messageRunId('call_once', recipient.id)),
      (r) => r?.status === 'completed',
    );
    expect(delivered?.status).toBe('completed');
    expect(await sendAgentMessage(h.server.turns, message, [recipient.id])).toEqual(first);
    const runs = (await h.client.runs.list({ agent_id: recipient.id })).getPaginatedItems();
    expect(runs.map((r) => r.id)).toEqual([messageRunId('call_once', recipient.id)]);
    const inputs = (await h.client.agents.messages.list(recipient.id)).getPaginatedItems();
    expect(
      inputs.filter((m) => m.message_type === 'system_message' && String(m.content).includes('hello')),
    ).toHaveLength(1);
  });

  it('refuses to wait on itself or on an agent that waits for it, instead of waiting forever', async () => {
    const [first, second] = await Promise.all([agent(), agent()]);
    h.stub.enqueue(
      {
        toolCalls: [
          {
            name: 'send_message_to_agent_and_wait_for_reply',
            arguments: { message: 'me?', other_agent_id: first.id },
          },
        ],
      },
      { text: 'ok' },
    );
    const self = await h.client.agents.messages.create(first.id, {
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(toolReturnsOf(self.messages)[0]).toMatchObject({ status: 'error' });
    expect(toolReturnsOf(self.messages)[0].tool_return).toMatch(/cannot wait for its own reply/);

    // first asks second; second, in its turn, asks first back: refused, and both turns end.
    h.stub.enqueue(
      {
        toolCalls: [
          {
            name: 'send_message_to_agent_and_wait_for_reply',
            arguments: { message: 'ping', other_agent_id: second.id },
          },
        ],
      },
      {
        toolCalls: [
          {
            name: 'send_message_to_agent_and_wait_for_reply',
            arguments: { message: 'pong', other_agent_id: first.id },
          },
        ],
      },
      { text: 'could not ask back' },
      { text: 'done' },
    );
    const cycle = await h.client.agents.messages.create(first.id, {
      messages: [{ role: 'user', content: 'go' }],
    });
    expect(toolReturnsOf(cycle.messages)[0].tool_return).toContain("'response': ['could not ask back']");
    const [secondRun] = (await h.client.runs.list({ agent_id: second.id })).getPaginatedItems();
    const inner = toolReturnsOf(
      (await h.client.runs.messages.list(secondRun.id)).getPaginatedItems() as unknown[],
    );
    expect(inner[0]).toMatchObject({ status: 'error' });
    expect(inner[0].tool_return).toMatch(/is waiting for this agent's reply/);
  });

  it('sends one-way notifications and messages every agent matching tags', async () => {
    const sender = await agent();
    const [red, blue] = await Promise.all([
      agent({ tags: ['team', 'red'] }),
      agent({ tags: ['team', 'blue'] }),
    ]);
    const saidRollCall = (request: ChatRequest) =>
      request.messages.some((m) => String(m.content).includes('roll call'));
    h.stub.setDefault((request) => ({ text: saidRollCall(request) ? 'here' : 'ok' }));
    h.stub.enqueue({
      toolCalls: [
        {
          name: 'send_message_to_agents_matching_tags',
          arguments: { message: 'roll call', match_all: ['team'], match_some: ['red', 'blue'] },
        },
      ],
    });
    const response = await h.client.agents.messages.create(sender.id, {
      messages: [{ role: 'user', content: 'x' }],
    });
    const answer = toolReturnsOf(response.messages)[0].tool_return;
    expect(answer).toContain(`{'agent_id': '${red.id}', 'response': ['here']}`);
    expect(answer).toContain(`{'agent_id': '${blue.id}', 'response': ['here']}`);

    h.stub.enqueue({
      toolCalls: [
        { name: 'send_message_to_agent_async', arguments: { message: 'fyi', other_agent_id: blue.id } },
      ],
    });
    const notified = await h.client.agents.messages.create(sender.id, {
      messages: [{ role: 'user', content: 'y' }],
    });
    expect(toolReturnsOf(notified.messages)[0]).toMatchObject({
      status: 'success',
      tool_return: 'Successfully sent message',
    });
    h.stub.setDefault(() => ({ text: 'ok' }));
  });
});
