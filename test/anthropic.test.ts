import Letta from '@letta-ai/letta-client';
import { startAnthropicStub, type AnthropicStub } from './helpers/anthropic-stub';
import { startTestServer, type TestServer } from './helpers/server';

describe('anthropic/<model> agents through @anthropic-ai/sdk', () => {
  let stub: AnthropicStub;
  let server: TestServer;
  let client: Letta;

  beforeAll(async () => {
    stub = await startAnthropicStub();
    server = await startTestServer({ ANTHROPIC_BASE_URL: stub.baseURL, ANTHROPIC_API_KEY: 'test-key' });
    client = new Letta({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.stopAll();
    await stub?.close();
  });

  const createAgent = () =>
    client.agents.create({
      model: 'anthropic/claude-sonnet-4-6',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
    });

  it("runs a step in Anthropic's wire format: system prompt, tools, tool_use and tool_result", async () => {
    const agent = await createAgent();
    expect(agent.llm_config).toMatchObject({ model: 'claude-sonnet-4-6', model_endpoint_type: 'anthropic' });
    const before = stub.requests.length;
    stub.enqueue(
      {
        text: 'Let me remember that.',
        toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } }],
      },
      { text: 'Noted: you like tea.' },
    );
    const response = await client.agents.messages.create(agent.id, {
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
    expect((await client.agents.blocks.retrieve('human', { agent_id: agent.id })).value).toBe(
      'Name: Alice\nLikes tea',
    );

    const [first, second] = stub.requests.slice(before);
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
    stub.enqueue({ status: 529 }, { text: 'Back again' });
    const retried = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(retried.stop_reason.stop_reason).toBe('end_turn');

    const before = stub.requests.length;
    stub.enqueue({
      status: 401,
      body: { type: 'error', error: { type: 'authentication_error', message: 'bad key' } },
    });
    const refused = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(refused.stop_reason.stop_reason).toBe('llm_api_error');
    expect(stub.requests.length - before).toBe(1);
  });
});
