import { useAgentServer } from './helpers/agent-server';

describe('anthropic/<model> agents through @anthropic-ai/sdk', () => {
  const h = useAgentServer('anthropic');

  const createAgent = () =>
    h.client.agents.create({
      model: 'anthropic/claude-sonnet-4-6',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
    });

  it("runs a turn in Anthropic's wire format: system prompt, tools, tool_use and tool_result", async () => {
    const agent = await createAgent();
    expect(agent.llm_config).toMatchObject({ model: 'claude-sonnet-4-6', model_endpoint_type: 'anthropic' });
    const before = h.stub.requests.length;
    h.stub.enqueue(
      {
        text: 'Let me remember that.',
        toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } }],
      },
      { text: 'Noted: you like tea.' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'I like tea' }],
    });
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    expect(response.messages.map((m) => m.message_type)).toEqual([
      'assistant_message',
      'tool_call_message',
      'tool_return_message',
      'assistant_message',
    ]);
    expect(response.usage).toMatchObject({ prompt_tokens: 24, completion_tokens: 14, step_count: 2 });
    expect((await h.client.agents.blocks.retrieve('human', { agent_id: agent.id })).value).toBe(
      'Name: Alice\nLikes tea',
    );

    const [first, second] = h.stub.requests.slice(before);
    expect(first.model).toBe('claude-sonnet-4-6');
    expect(first.system).toContain('<human>');
    expect(first.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'I like tea' }] }]);
    expect(first.tools?.map((t) => t.name).sort()).toEqual([
      'conversation_search',
      'memory_insert',
      'memory_replace',
    ]);
    expect(first.tools?.[0].input_schema).toMatchObject({ type: 'object' });
    expect(first.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });

    const toolUse = second.messages[1].content.find((c) => c.type === 'tool_use')!;
    expect(second.messages[1].role).toBe('assistant');
    expect(second.messages[2]).toMatchObject({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: toolUse.id }],
    });
  });

  it('retries an overloaded endpoint, and stops at once on an authentication error', async () => {
    const agent = await createAgent();
    h.stub.enqueue({ status: 529 }, { text: 'Back again' });
    const retried = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(retried.stop_reason.stop_reason).toBe('end_turn');

    const before = h.stub.requests.length;
    h.stub.enqueue({
      status: 401,
      body: { type: 'error', error: { type: 'authentication_error', message: 'bad key' } },
    });
    const refused = h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    await expect(refused).rejects.toMatchObject({
      status: 401,
      error: { error: { type: 'llm_authentication' } },
    });
    expect(h.stub.requests.length - before).toBe(1);
  });

  it("passes a client tool's image return to the model as an image block, and shows it as Letta's return parts", async () => {
    const agent = await createAgent();
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64');
    const screenshot = {
      name: 'screenshot',
      description: "Takes a screenshot of the user's screen.",
      parameters: { type: 'object', properties: {} },
    };
    h.stub.enqueue({ toolCalls: [{ name: 'screenshot', arguments: {} }] });
    const paused = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'What is on my screen?' }],
      client_tools: [screenshot],
    });
    expect(paused.stop_reason.stop_reason).toBe('requires_approval');
    const request = paused.messages.find((m) => m.message_type === 'approval_request_message')!;
    const callId = (request as { tool_call: { tool_call_id: string } }).tool_call.tool_call_id;

    const before = h.stub.requests.length;
    h.stub.enqueue({ text: 'A terminal.' });
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } };
    const answered = await h.client.agents.messages.create(agent.id, {
      messages: [
        {
          type: 'approval',
          approvals: [
            {
              type: 'tool',
              tool_call_id: callId,
              tool_return: [{ type: 'text', text: 'The screen:' }, image] as never,
              status: 'success',
            },
          ],
        },
      ],
      client_tools: [screenshot],
    });
    expect(answered.stop_reason.stop_reason).toBe('end_turn');
    const shown = answered.messages.find((m) => m.message_type === 'tool_return_message');
    expect(shown).toMatchObject({
      tool_return: 'The screen: [Image omitted]',
      tool_returns: [
        {
          tool_call_id: callId,
          status: 'success',
          tool_return: [{ type: 'text', text: 'The screen:' }, image],
        },
      ],
    });
    const result = h.stub.requests[before].messages
      .flatMap((m) => m.content)
      .find((c) => c.type === 'tool_result');
    expect(result).toEqual({
      type: 'tool_result',
      tool_use_id: callId,
      content: [{ type: 'text', text: 'The screen:' }, image],
    });
  });
});
