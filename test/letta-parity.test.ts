import { NotFoundError } from '@letta-ai/letta-client';
import { useAgentServer } from './helpers/agent-server';
import { toolReturnsOf } from './helpers/tool-returns';

const tool = (body: string) =>
  `def shout(text: str) -> str:\n    """Shouts.\n\n    Args:\n        text: what to shout\n    """\n    ${body}\n`;

/** What a Letta app meets first, answered as Letta's server answers it. */
describe('Letta parity', () => {
  const h = useAgentServer('openai');

  it('refuses a second tool of the same name unless it is the same, and keeps upsert for replacing', async () => {
    const created = await h.client.tools.create({ source_code: tool('return text.upper()') });
    expect((await h.client.tools.create({ source_code: tool('return text.upper()') })).id).toBe(created.id);
    await expect(h.client.tools.create({ source_code: tool('return text.lower()') })).rejects.toMatchObject({
      status: 409,
    });
    const upserted = await h.client.tools.upsert({ source_code: tool('return text.lower()') });
    expect(upserted).toMatchObject({ id: created.id, source_code: tool('return text.lower()') });
  });

  it('refuses a tool update whose source does not parse, and stores nothing', async () => {
    const created = await h.client.tools.create({
      source_code: tool('return text[::-1]').replace('shout', 'flip'),
    });
    await expect(
      h.client.tools.update(created.id, { source_code: 'def flip(text: str) -> str:\n    return (\n' }),
    ).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/parse|syntax/i) });
    expect((await h.client.tools.retrieve(created.id)).source_code).toBe(created.source_code);
  });

  it('refuses two blocks of one label and unknown block ids, storing no agent', async () => {
    const before = (await h.client.agents.list({ limit: 1000 })).getPaginatedItems().length;
    await expect(
      h.client.agents.create({
        model: 'openai/gpt-4o-mini',
        memory_blocks: [
          { label: 'human', value: 'a' },
          { label: 'human', value: 'b' },
        ],
      }),
    ).rejects.toMatchObject({ status: 400 });
    await expect(
      h.client.agents.create({
        model: 'openai/gpt-4o-mini',
        block_ids: ['block-00000000-0000-4000-8000-000000000000'],
      }),
    ).rejects.toMatchObject({ status: 404 });
    expect((await h.client.agents.list({ limit: 1000 })).getPaginatedItems()).toHaveLength(before);
  });

  it('answers Letta Cloud-only calls as a self-hosted server does: a JSON 404', async () => {
    await expect(h.client.templates.create({ agent_id: 'agent-x' } as never)).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });

  it('names the tool and its step in a tool return, and joins multi-part user content as Letta does', async () => {
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tools: ['conversation_search'],
    });
    h.stub.enqueue(
      { toolCalls: [{ name: 'conversation_search', arguments: { query: 'x' } }] },
      { text: 'done' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'first part' },
            { type: 'text', text: 'second part' },
          ],
        },
      ],
    });
    const [toolReturn] = toolReturnsOf(response.messages);
    expect(toolReturn).toMatchObject({
      name: 'conversation_search',
      step_id: expect.stringMatching(/^step-/),
    });
    const history = (await h.client.agents.messages.list(agent.id, { order: 'asc' })).getPaginatedItems();
    expect(history.find((m) => m.message_type === 'user_message')).toMatchObject({
      content: 'first part\n\nsecond part',
    });
  });

  it('lists and searches messages across agents, lists agents’ tags, and searches tools', async () => {
    const [a, b] = await Promise.all([
      h.client.agents.create({ model: 'openai/gpt-4o-mini', tags: ['parity-x', 'shared'] }),
      h.client.agents.create({ model: 'openai/gpt-4o-mini', tags: ['parity-y', 'shared'] }),
    ]);
    h.stub.enqueue({ text: 'zebra answer' }, { text: 'okapi answer' });
    await h.client.agents.messages.create(a.id, { messages: [{ role: 'user', content: 'about zebras' }] });
    await h.client.agents.messages.create(b.id, { messages: [{ role: 'user', content: 'about okapis' }] });

    const latest = await h.client.messages.list({ limit: 4 });
    expect(latest.map((m) => m.message_type)).toEqual([
      'assistant_message',
      'user_message',
      'assistant_message',
      'user_message',
    ]);
    const found = await h.client.messages.search({ query: 'okapis' });
    expect(found.map((r) => [r.agent_id, r.message_type, 'content' in r ? r.content : null])).toEqual([
      [b.id, 'assistant_message', 'okapi answer'],
      [b.id, 'user_message', 'about okapis'],
    ]);
    // No query: every message, newest first (a bare ORDER BY 0 once made this a 500).
    expect((await h.client.messages.search({ query: '', agent_id: a.id }))[0]).toMatchObject({
      content: 'zebra answer',
    });
    const onlyA = await h.client.messages.search({ query: 'answer', agent_id: a.id });
    expect(onlyA.map((r) => r.agent_id)).toEqual([a.id]);

    const tags = await h.client.tags.list({ name: 'parity-' });
    expect(tags).toEqual(['parity-x', 'parity-y']);
    // Letta's deprecated spelling filters the same way.
    expect(await h.client.tags.list({ query_text: 'parity-y' })).toEqual(['parity-y']);
    const tools = await h.client.tools.search({ query: 'memory insert' });
    expect(tools[0].tool.name).toBe('memory_insert');
  });

  it('lists an agent’s tools, compacts, recompiles and resets its history', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tools: ['web_search'] });
    const tools = (await h.client.agents.tools.list(agent.id)).getPaginatedItems().map((t) => t.name);
    expect(tools.sort()).toEqual(['conversation_search', 'memory_insert', 'memory_replace', 'web_search']);
    for (const text of ['first', 'second']) {
      h.stub.enqueue({ text: `re ${text}` });
      await h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: text }] });
    }
    h.stub.enqueue({ text: 'They said first, then second.' });
    const compacted = await h.client.agents.messages.compact(agent.id);
    expect(compacted).toMatchObject({ summary: 'They said first, then second.' });
    expect(await h.client.agents.recompile(agent.id)).toContain('Memory Blocks');

    const reset = await h.client.agents.messages.reset(agent.id, { add_default_initial_messages: false });
    expect(reset?.id).toBe(agent.id);
    const left = (await h.client.agents.messages.list(agent.id)).getPaginatedItems();
    expect(left.map((m) => m.message_type)).toEqual(['system_message']);
  });

  it('honours model_settings and llm_config changes in what goes to the model, and returns them', async () => {
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      model_settings: {
        provider_type: 'openai',
        temperature: 0.3,
        max_output_tokens: 123,
        parallel_tool_calls: true,
        reasoning: { reasoning_effort: 'low' },
      },
    });
    expect(agent.model_settings).toMatchObject({
      temperature: 0.3,
      max_output_tokens: 123,
      parallel_tool_calls: true,
    });
    expect(agent.llm_config).toMatchObject({ temperature: 0.3, max_tokens: 123, parallel_tool_calls: true });
    const sent = async () => {
      h.stub.enqueue({ text: 'ok' });
      await h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: 'hi' }] });
      return h.stub.requests.at(-1) as unknown as Record<string, unknown>;
    };
    expect(await sent()).toMatchObject({
      temperature: 0.3,
      max_completion_tokens: 123,
      reasoning_effort: 'low',
      parallel_tool_calls: true,
    });
    const updated = await h.client.agents.update(agent.id, {
      model_settings: { provider_type: 'openai', temperature: 0.9, parallel_tool_calls: false },
    });
    expect(updated.llm_config).toMatchObject({
      temperature: 0.9,
      max_tokens: 123,
      parallel_tool_calls: false,
    });
    expect(await sent()).toMatchObject({ temperature: 0.9, max_completion_tokens: 123 });
  });

  it("gives a new agent Letta's model settings: temperature 1, 16384 output tokens, parallel calls read true but run only when set", async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const letta = {
      max_output_tokens: 16384,
      parallel_tool_calls: true,
      strict: false,
      provider_type: 'openai',
      temperature: 1.0,
      reasoning: { reasoning_effort: 'minimal' },
      response_format: null,
    };
    expect(agent.model_settings).toEqual(letta);
    expect(agent.llm_config).toMatchObject({
      temperature: 1.0,
      max_tokens: 16384,
      parallel_tool_calls: false,
    });
    const renamed = await h.client.agents.update(agent.id, { name: 'renamed' });
    expect(renamed.model_settings).toEqual(letta);
    h.stub.enqueue({ text: 'ok' });
    await h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: 'hi' }] });
    const sent = h.stub.requests.at(-1) as unknown as Record<string, unknown>;
    expect(sent).toMatchObject({ temperature: 1.0, max_completion_tokens: 16384 });
    // Unset, parallel calls stay off as on Letta (its llm_config's default), and no reasoning effort goes out.
    expect(sent.parallel_tool_calls).not.toBe(true);
    expect(sent).not.toHaveProperty('reasoning_effort');
    // An OpenAI-compatible server of one's own keeps its own output limit.
    const proxied = await h.client.agents.create({ model: 'openai-proxy/gpt-4o-mini' });
    expect(proxied.llm_config.max_tokens ?? null).toBeNull();
  });

  it('honours an llm_config update as it honours model_settings: what goes to the model, and what it returns', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    expect(agent.llm_config.parallel_tool_calls).toBe(false);
    const sent = async () => {
      h.stub.enqueue({ text: 'ok' });
      await h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: 'hi' }] });
      return h.stub.requests.at(-1) as unknown as Record<string, unknown>;
    };
    const updated = await h.client.agents.update(agent.id, {
      llm_config: {
        ...agent.llm_config,
        parallel_tool_calls: true,
        temperature: 0.2,
        max_tokens: 77,
        reasoning_effort: 'high',
      },
    });
    expect(updated.llm_config).toMatchObject({
      parallel_tool_calls: true,
      temperature: 0.2,
      max_tokens: 77,
      reasoning_effort: 'high',
    });
    expect(updated.model_settings).toMatchObject({
      parallel_tool_calls: true,
      temperature: 0.2,
      max_output_tokens: 77,
      reasoning: { reasoning_effort: 'high' },
    });
    expect(await sent()).toMatchObject({
      parallel_tool_calls: true,
      temperature: 0.2,
      max_completion_tokens: 77,
      reasoning_effort: 'high',
    });

    const off = await h.client.agents.update(agent.id, {
      llm_config: { ...updated.llm_config, parallel_tool_calls: false },
    });
    expect(off.llm_config).toMatchObject({ parallel_tool_calls: false, temperature: 0.2, max_tokens: 77 });
    expect((await h.client.agents.retrieve(agent.id)).model_settings).toMatchObject({
      parallel_tool_calls: false,
    });
    expect(await sent()).toMatchObject({ parallel_tool_calls: false, temperature: 0.2 });
    // The top-level setting wins over the llm_config's, as in Letta.
    const both = await h.client.agents.update(agent.id, {
      llm_config: { ...off.llm_config, parallel_tool_calls: false },
      parallel_tool_calls: true,
    });
    expect(both.llm_config.parallel_tool_calls).toBe(true);
  });
});
