import { useAgentServer } from './helpers/agent-server';

describe('the agent turn through the official Letta client', () => {
  const h = useAgentServer('openai');

  const createAgent = (extra: Record<string, unknown> = {}) =>
    h.client.agents.create({
      name: 'seed',
      model: 'openai/gpt-4o-mini',
      memory_blocks: [
        { label: 'human', value: 'Name: Alice' },
        { label: 'persona', value: 'I am a helpful assistant.' },
      ],
      ...extra,
    });

  it('creates an agent with memory blocks and Letta defaults', async () => {
    const agent = await createAgent();
    expect(agent.id).toMatch(/^agent-[0-9a-f-]{36}$/);
    expect(agent.agent_type).toBe('letta_v1_agent');
    expect(agent.blocks.map((b) => [b.label, b.value, b.limit])).toEqual([
      ['human', 'Name: Alice', 100000],
      ['persona', 'I am a helpful assistant.', 100000],
    ]);
    expect(agent.blocks[0].description).toMatch(/^The human block/);
    expect(agent.tools.map((t) => t.name).sort()).toEqual([
      'conversation_search',
      'memory_insert',
      'memory_replace',
    ]);
    expect(agent.tool_rules).toEqual([]);
    expect(agent.llm_config).toMatchObject({
      model: 'gpt-4o-mini',
      model_endpoint_type: 'openai',
      handle: 'openai/gpt-4o-mini',
    });
    const fetched = await h.client.agents.retrieve(agent.id);
    expect(fetched.name).toBe('seed');
  });

  it('answers a message with the assistant reply, and lists the conversation', async () => {
    const agent = await createAgent();
    h.stub.enqueue({ text: 'Hello Alice!' });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi there' }],
    });
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    expect(response.messages.map((m) => m.message_type)).toEqual(['assistant_message']);
    expect(response.messages[0]).toMatchObject({ content: 'Hello Alice!' });
    expect(response.usage).toMatchObject({ step_count: 1, prompt_tokens: 10, completion_tokens: 5 });

    const request = h.stub.requests[h.stub.requests.length - 1];
    expect(request.model).toBe('gpt-4o-mini');
    expect(request.messages[0].role).toBe('system');
    expect(request.messages[0].content).toContain('<human>');
    expect(request.messages[0].content).toContain('Name: Alice');
    expect(request.messages.at(-1)).toMatchObject({ role: 'user', content: 'Hi there' });

    const page = await h.client.agents.messages.list(agent.id, { order: 'asc' });
    expect(page.getPaginatedItems().map((m) => m.message_type)).toEqual([
      'system_message',
      'user_message',
      'assistant_message',
    ]);
  });

  it('runs a memory tool call that changes the block, then replies', async () => {
    const agent = await createAgent();
    h.stub.enqueue(
      {
        toolCalls: [
          { name: 'memory_replace', arguments: { label: 'human', old_string: 'Alice', new_string: 'Bob' } },
        ],
      },
      { text: 'Noted, Bob.' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'My name is Bob' }],
    });
    expect(response.messages.map((m) => m.message_type)).toEqual([
      'tool_call_message',
      'tool_return_message',
      'assistant_message',
    ]);
    const ret = response.messages[1] as { status: string; tool_return: string };
    expect(ret.status).toBe('success');
    expect(ret.tool_return).toBe('Name: Bob'); // the block's new value, as Letta 0.16.8 returns it
    const block = await h.client.agents.blocks.retrieve('human', { agent_id: agent.id });
    expect(block.value).toBe('Name: Bob');
    expect(response.usage.step_count).toBe(2);
  });

  it("finds earlier messages with conversation_search, but not the system prompt's text", async () => {
    const agent = await createAgent();
    h.stub.enqueue({ text: 'Noted.' });
    await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'I drink oolong every morning' }],
    });
    h.stub.enqueue(
      { toolCalls: [{ name: 'conversation_search', arguments: { query: 'oolong' } }] },
      // "helpful" is in the persona block, hence in the system message only.
      { toolCalls: [{ name: 'conversation_search', arguments: { query: 'helpful' } }] },
      { text: 'Found it.' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'What do I drink?' }],
    });
    const returns = response.messages
      .filter((m) => m.message_type === 'tool_return_message')
      .map((m) => JSON.parse((m as { tool_return: string }).tool_return));
    expect(returns[0].results.map((r: { content: string }) => r.content)).toEqual([
      'I drink oolong every morning',
    ]);
    expect(returns[1]).toEqual({ message: 'No results found.', results: [] });
  });

  it('streams a reply as server-sent events', async () => {
    const agent = await createAgent();
    h.stub.enqueue(
      { toolCalls: [{ name: 'conversation_search', arguments: { query: 'Alice' } }] },
      { text: 'Streamed!' },
    );
    const stream = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Search please' }],
      streaming: true,
    });
    const types: string[] = [];
    for await (const chunk of stream) types.push(String(chunk.message_type));
    expect(types).toEqual([
      'ping',
      'tool_call_message',
      'tool_return_message',
      'assistant_message',
      'stop_reason',
      'usage_statistics',
    ]);
  });

  it('streams each message as the turn stores it, not all at the end', async () => {
    const agent = await createAgent();
    h.stub.enqueue(
      { toolCalls: [{ name: 'conversation_search', arguments: { query: 'Alice' } }] },
      { text: 'Took a while.', delayMs: 1_500 },
    );
    const stream = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Search slowly' }],
      streaming: true,
    });
    const arrivals: Record<string, number> = {};
    for await (const chunk of stream) arrivals[String(chunk.message_type)] = Date.now();
    expect(arrivals.assistant_message - arrivals.tool_return_message).toBeGreaterThanOrEqual(1_000);
  });

  it("ends a failed stream with the stop reason and Letta's error event", async () => {
    const agent = await createAgent();
    h.stub.enqueue({ status: 401, body: { error: { message: 'bad key', type: 'invalid_request_error' } } });
    const stream = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
      streaming: true,
    });
    const chunks: unknown[] = [];
    const failure = await (async () => {
      for await (const chunk of stream) chunks.push(chunk);
    })().catch((error: unknown) => error);
    expect(chunks.map((c) => (c as { message_type: string }).message_type)).toEqual(['ping', 'stop_reason']);
    expect(chunks[1]).toMatchObject({ stop_reason: 'llm_api_error' });
    expect(failure).toMatchObject({
      error: { message_type: 'error_message', error_type: 'llm_authentication' },
    });
    expect((failure as { error: { message: string } }).error.message).toContain('401');
  });

  it('runs a message in the background, to be polled', async () => {
    const agent = await createAgent();
    h.stub.enqueue({ text: 'From the background', delayMs: 200 });
    const run = await h.client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'Later' }],
    });
    expect(run.id).toMatch(/^run-/);
    let current = await h.client.runs.retrieve(run.id);
    for (let i = 0; i < 100 && !['completed', 'failed', 'cancelled'].includes(current.status!); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      current = await h.client.runs.retrieve(run.id);
    }
    expect(current.status).toBe('completed');
    expect(current.stop_reason).toBe('end_turn');
    const messages = await h.client.runs.messages.list(run.id);
    expect(messages.getPaginatedItems().map((m) => m.message_type)).toEqual([
      'user_message',
      'assistant_message',
    ]);
  });

  it('ends a model that keeps calling tools at max_steps', async () => {
    const agent = await createAgent();
    h.stub.setDefault(() => ({ toolCalls: [{ name: 'conversation_search', arguments: { query: 'x' } }] }));
    try {
      const response = await h.client.agents.messages.create(agent.id, {
        messages: [{ role: 'user', content: 'Loop' }],
        max_steps: 3,
      });
      expect(response.stop_reason.stop_reason).toBe('max_steps');
      expect(response.usage.step_count).toBe(3);
    } finally {
      h.stub.setDefault(() => ({ text: 'ok' }));
    }
  });

  it('retries a model endpoint that answers 500, and completes', async () => {
    const agent = await createAgent();
    const before = h.stub.requests.length;
    h.stub.enqueue({ status: 500 }, { status: 500 }, { text: 'Third time lucky' });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    expect(response.messages[0]).toMatchObject({ content: 'Third time lucky' });
    expect(h.stub.requests.length - before).toBe(3);
  });

  it("stops at once with llm_api_error when the provider refuses the request, answering Letta's status", async () => {
    const agent = await createAgent();
    const before = h.stub.requests.length;
    h.stub.enqueue({ status: 401, body: { error: { message: 'bad key', type: 'invalid_request_error' } } });
    const refused = h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    await expect(refused).rejects.toMatchObject({
      status: 401,
      error: {
        error: {
          type: 'llm_authentication',
          message: 'Authentication failed with the LLM model provider.',
          detail: expect.stringContaining('bad key'),
        },
      },
    });
    expect(h.stub.requests.length - before).toBe(1);
    const [run] = (await h.client.runs.list({ agent_id: agent.id })).getPaginatedItems();
    expect(run).toMatchObject({ status: 'failed', stop_reason: 'llm_api_error' });
    expect(run.metadata?.error).toMatchObject({ error_type: 'llm_authentication' });
    // The failed turn left the history as it was: a client's retries do not pile up its message.
    const history = (await h.client.agents.messages.list(agent.id, { order: 'asc' })).getPaginatedItems();
    expect(history.map((m) => m.message_type)).toEqual(['system_message']);
  });

  it('cancels a running turn', async () => {
    const agent = await createAgent();
    h.stub.enqueue({ text: 'too late', delayMs: 10_000 });
    const run = await h.client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'Slow' }],
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const cancelled = await h.client.agents.messages.cancel(agent.id);
    expect(cancelled).toEqual({ [run.id]: 'cancelled' });
    let current = await h.client.runs.retrieve(run.id);
    for (let i = 0; i < 100 && current.status !== 'cancelled'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      current = await h.client.runs.retrieve(run.id);
    }
    expect(current.status).toBe('cancelled');
    expect(current.stop_reason).toBe('cancelled');
  });

  it('sends strict tool schemas when llm_config.strict is on, and drops nulls for optional arguments', async () => {
    const agent = await createAgent({
      llm_config: {
        model: 'gpt-4o-mini',
        model_endpoint_type: 'openai',
        context_window: 128000,
        strict: true,
      },
    });
    expect(agent.llm_config.strict).toBe(true);
    const before = h.stub.requests.length;
    h.stub.enqueue(
      {
        toolCalls: [
          // A null for an optional argument (a local model's way of leaving it out) is dropped.
          {
            name: 'memory_insert',
            arguments: { label: 'human', new_string: 'Likes tea', insert_line: null },
          },
        ],
      },
      { text: 'Noted.' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'I like tea' }],
    });
    const insert = h.stub.requests[before].tools!.find((t) => t.function.name === 'memory_insert')!.function;
    expect(insert.strict).toBe(true);
    expect(insert.parameters).toMatchObject({
      additionalProperties: false,
      required: ['label', 'new_string', 'insert_line'],
      properties: { insert_line: { type: 'integer' } },
    });
    expect(response.messages.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'success',
    });
    const block = await h.client.agents.blocks.retrieve('human', { agent_id: agent.id });
    expect(block.value).toBe('Name: Alice\nLikes tea');
  });

  it('answers errors in Letta shape', async () => {
    const missing = 'agent-00000000-0000-4000-8000-000000000000';
    await expect(h.client.agents.retrieve(missing)).rejects.toMatchObject({ status: 404 });
    // A turn's start and an answer both find no agent to lock.
    await expect(
      h.client.agents.messages.create(missing, { messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toMatchObject({ status: 404, error: { detail: `Agent ${missing} not found` } });
    await expect(
      h.client.agents.messages.create(missing, {
        messages: [
          { type: 'approval', approvals: [{ type: 'approval', tool_call_id: 'call_1', approve: true }] },
        ],
      }),
    ).rejects.toMatchObject({ status: 404 });
    await expect(h.client.agents.create({ name: 'no model' })).rejects.toMatchObject({ status: 400 });
    await expect(h.client.agents.create({ model: 'anthropic/claude-x' })).rejects.toMatchObject({
      status: 400,
      error: { detail: 'Provider anthropic is not configured: set ANTHROPIC_API_KEY' },
    });
    const res = await fetch(`${h.server.url}/v1/agents/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', memory_blocks: [{ value: 'no label' }] }),
    });
    expect(res.status).toBe(422);
    expect(res.headers.get('x-should-retry')).toBe('false');
  });
});
