import { useAgentServer } from './helpers/agent-server';
import { inventoryArgsSchema } from './helpers/pydantic-schemas';

/** The names Letta 0.16.8 lists in GET /v1/tools/ (its LETTA_TOOL_SET) that it upserts when one is missing. */
const LETTA_TOOL_SET = [
  'send_message',
  'conversation_search',
  'archival_memory_insert',
  'archival_memory_search',
  'core_memory_append',
  'core_memory_replace',
  'memory',
  'memory_apply_patch',
  'send_message_to_agent_and_wait_for_reply',
  'send_message_to_agents_matching_tags',
  'send_message_to_agent_async',
  'memory_replace',
  'memory_insert',
  'memory_rethink',
  'memory_finish_edits',
  'store_memories',
  'rethink_user_memory',
  'finish_rethinking_memory',
  'search_memory',
  'run_code',
  'run_code_with_tools',
  'web_search',
  'fetch_webpage',
  'open_files',
  'grep_files',
  'semantic_search_files',
];

describe("Letta's base tools, and its tool tests that differed (issue 66)", () => {
  const h = useAgentServer('openai');

  const createAgent = (extra: Record<string, unknown> = {}) =>
    h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [
        { label: 'human', value: 'Name: Alice' },
        { label: 'persona', value: 'Helpful.', read_only: true } as { label: string; value: string },
      ],
      ...extra,
    });
  const blockLabels = async (agentId: string) =>
    (await h.client.agents.blocks.list(agentId)).getPaginatedItems().map((b) => b.label);

  it("lists every one of Letta's base tools, and puts back one that was deleted (test_base_tools_upsert_on_list)", async () => {
    const names = async () =>
      (await h.client.tools.list({ limit: 100 })).getPaginatedItems().map((t) => t.name);
    expect(await names()).toEqual(expect.arrayContaining(LETTA_TOOL_SET));
    const [sendMessage] = (await h.client.tools.list({ name: 'send_message' })).getPaginatedItems();
    expect(sendMessage).toMatchObject({ tool_type: 'letta_core', json_schema: { name: 'send_message' } });
    await h.client.tools.delete(sendMessage.id);
    expect(await names()).toContain('send_message');
    const [memory] = (await h.client.tools.list({ name: 'memory' })).getPaginatedItems();
    expect(memory).toMatchObject({ tool_type: 'letta_memory_core', tags: ['letta_memory_core'] });

    // A custom tool of a built-in's name (one a database held before the built-in came) stays custom.
    const named = async (name: string) => (await h.client.tools.list({ name })).getPaginatedItems();
    await h.client.tools.delete((await named('memory_finish_edits'))[0].id);
    const custom = await h.client.tools.create({
      source_code: 'def memory_finish_edits() -> str:\n    """Mine."""\n    return "done"\n',
    });
    await names();
    expect(await named('memory_finish_edits')).toEqual([
      expect.objectContaining({ id: custom.id, tool_type: 'custom' }),
    ]);
    await h.client.tools.delete(custom.id);
    await names();
    expect((await named('memory_finish_edits'))[0].tool_type).toBe('letta_sleeptime_core');
  });

  it("runs a built-in through the agent's tool-run route against its memory (test_calling_tools)", async () => {
    const agent = await createAgent({ tools: ['memory', 'store_memories'] });
    const run = (toolName: string, args: Record<string, unknown>) =>
      h.client.agents.tools.run(toolName, { agent_id: agent.id, args });

    const inserted = await run('memory_insert', { label: 'human', new_string: 'test' });
    expect(inserted).toMatchObject({ status: 'success', func_return: 'Name: Alice\ntest' });
    expect((await h.client.agents.blocks.retrieve('human', { agent_id: agent.id })).value).toBe(
      'Name: Alice\ntest',
    );

    const wrong = await run('memory_insert', { label: 'human', FAKE_ARG: 'test' });
    expect(wrong).toMatchObject({ status: 'error', func_return: null });
    expect(wrong.stderr?.[0]).toContain("missing or invalid argument 'new_string'");

    const created = await run('memory', {
      command: 'create',
      path: '/memories/notes',
      description: 'Loose notes.',
      file_text: 'first',
    });
    expect(created.status).toBe('success');
    const notes = await h.client.agents.blocks.retrieve('notes', { agent_id: agent.id });
    expect(notes).toMatchObject({ value: 'first', description: 'Loose notes.' });
    const deleted = await run('memory', { command: 'delete', path: '/memories/persona' });
    expect(deleted.status).toBe('error'); // read-only
    expect(await blockLabels(agent.id)).toEqual(expect.arrayContaining(['human', 'persona', 'notes']));

    // A voice agent's tool on an agent of another type: its reason, as an error.
    const voice = await run('store_memories', { chunks: [] });
    expect(voice.status).toBe('error');
    expect(voice.stderr?.[0]).toContain('voice agents');
    // A tool the agent does not have, and one that runs only within a turn.
    await expect(run('memory_apply_patch', { label: 'human', patch: '+x' })).rejects.toMatchObject({
      status: 404,
    });
    const coder = await createAgent({ tools: ['run_code'] });
    await expect(
      h.client.agents.tools.run('run_code', { agent_id: coder.id, args: { code: '1', language: 'python' } }),
    ).rejects.toMatchObject({ status: 400 });
  });

  it('loses no edit when route runs and a turn edit the same block at once (the agent lock)', async () => {
    const agent = await createAgent({ tools: ['memory'] });
    h.stub.enqueue(
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_string: 'from the turn' } }] },
      { text: 'Noted.' },
    );
    const lines = Array.from({ length: 12 }, (_, i) => `line ${i}`);
    const [turn, ...runs] = await Promise.all([
      h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: 'Remember' }] }),
      ...lines.map((line, i) =>
        h.client.agents.tools.run(i % 2 ? 'memory_insert' : 'memory', {
          agent_id: agent.id,
          args:
            i % 2
              ? { label: 'human', new_string: line }
              : { command: 'insert', path: 'human', insert_text: line },
        }),
      ),
    ]);
    expect(turn.stop_reason.stop_reason).toBe('end_turn');
    expect(runs.map((r) => r.status)).toEqual(lines.map(() => 'success'));
    const value = (await h.client.agents.blocks.retrieve('human', { agent_id: agent.id })).value;
    expect(value.split('\n').sort()).toEqual(['Name: Alice', 'from the turn', ...lines].sort());
  });

  it('runs memory_apply_patch in a turn: blocks added, edited and renamed in one call, the next step sees them', async () => {
    const agent = await createAgent({ tools: ['memory_apply_patch'] });
    const patch = [
      '*** Add Block: todo',
      'Description: Open tasks.',
      '+- buy tea',
      '*** Update Block: human',
      '-Name: Alice',
      '+Name: Bob',
      '*** Move to: user',
    ].join('\n');
    h.stub.enqueue(
      { toolCalls: [{ name: 'memory_apply_patch', arguments: { label: '', patch } }] },
      { text: 'Noted.' },
    );
    const before = h.stub.requests.length;
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: "I'm Bob, and I need tea" }],
    });
    expect(response.messages.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'success',
      tool_return: expect.stringContaining("Renamed memory block 'human' to 'user'"),
    });
    expect(await blockLabels(agent.id)).toEqual(expect.arrayContaining(['user', 'persona', 'todo']));
    expect((await h.client.agents.blocks.retrieve('user', { agent_id: agent.id })).value).toBe('Name: Bob');
    // The step after the call reads the blocks as the call left them.
    const system = h.stub.requests[before + 1].messages[0].content as string;
    expect(system).toContain('- buy tea');
    expect(system).toContain('Name: Bob');
  });

  it('accepts Pydantic args_schema tools with nested models, as Letta stores them (test_pydantic_*_tool)', async () => {
    const source =
      'def manage_inventory(data: InventoryEntry, quantity_change: int) -> bool:\n    """\n    Implementation of the manage_inventory tool\n    """\n    return True\n';
    const tool = await h.client.tools.upsert({
      source_code: source,
      args_json_schema: inventoryArgsSchema,
      description: 'Update inventory catalogue with a new data entry',
      tags: ['inventory', 'shop'],
    });
    // Letta 0.16.8's schema for this model (generate_schema_from_args_schema_v2, run on it).
    expect(tool.json_schema).toEqual({
      name: 'manage_inventory',
      description: 'Implementation of the manage_inventory tool',
      parameters: {
        type: 'object',
        properties: {
          data: {
            type: 'object',
            properties: {
              timestamp: { type: 'integer', description: '' },
              item: {
                type: 'object',
                properties: {
                  sku: { type: 'string', description: '' },
                  price: { type: 'number', description: '' },
                },
                required: ['sku', 'price'],
                description: '',
              },
              transaction_id: { type: 'string', description: '' },
            },
            required: ['timestamp', 'item', 'transaction_id'],
            description: '',
          },
          quantity_change: { type: 'integer', description: '' },
        },
        required: ['data', 'quantity_change'],
      },
    });
    expect(tool.description).toBe('Update inventory catalogue with a new data entry');

    // A json_schema given with $defs is stored as given, and the model gets it inlined and strict.
    const steps = {
      name: 'create_task_plan',
      description: 'Creates a task plan.',
      parameters: {
        $defs: {
          Step: {
            type: 'object',
            properties: { name: { type: 'string', description: 'Name of the step.' } },
            required: ['name'],
          },
        },
        type: 'object',
        properties: { steps: { type: 'array', items: { $ref: '#/$defs/Step' }, description: 'The steps.' } },
        required: ['steps'],
      },
    };
    const plan = await h.client.tools.upsert({
      source_code: 'def create_task_plan(steps):\n    """Creates a task plan."""\n    return steps\n',
      json_schema: steps,
    });
    expect(plan.json_schema).toEqual(steps);
    const agent = await createAgent({
      tool_ids: [tool.id, plan.id],
      llm_config: {
        model: 'gpt-4o-mini',
        model_endpoint_type: 'openai',
        context_window: 128000,
        strict: true,
      },
    });
    h.stub.enqueue({ text: 'Ready.' });
    const before = h.stub.requests.length;
    await h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: 'Plan it' }] });
    const offered = h.stub.requests[before].tools!.map((t) => t.function);
    const sent = offered.find((f) => f.name === 'create_task_plan')!;
    expect(JSON.stringify(offered)).not.toContain('$ref');
    expect(sent).toMatchObject({
      strict: true,
      parameters: {
        properties: {
          steps: {
            items: { type: 'object', properties: { name: { type: 'string' } }, additionalProperties: false },
          },
        },
      },
    });
    expect(offered.find((f) => f.name === 'manage_inventory')!.parameters).toMatchObject({
      properties: { data: { properties: { item: { properties: { sku: { type: 'string' } } } } } },
    });
  });

  it('refuses a json_schema that names another function than new source, then renames by the schema (test_tool_rename_with_json_schema_and_source_code)', async () => {
    // What upsert_from_function sends for Letta's initial_tool: its source as inspect shows it.
    const tool = await h.client.tools.upsert({
      source_code:
        'def initial_tool(x: int) -> int:\n    """\n    Multiply a number by 2\n\n    Args:\n        x: The input number\n\n    Returns:\n        The input multiplied by 2\n    """\n    return x * 2\n',
    });
    expect(tool.name).toBe('initial_tool');
    const newSource = [
      'def renamed_function(value: float, multiplier: float = 2.0) -> float:',
      "    '''",
      '    Multiply a value by a multiplier',
      '',
      '    Args:',
      '        value: The input value',
      '        multiplier: The multiplier to use (default 2.0)',
      '',
      '    Returns:',
      '        The value multiplied by the multiplier',
      "    '''",
      '    return value * multiplier',
    ].join('\n');
    const schema = {
      name: 'custom_schema_name',
      description: 'Custom description from JSON schema',
      parameters: {
        type: 'object',
        properties: {
          value: { type: 'number', description: 'Input value from JSON schema' },
          multiplier: { type: 'number', description: 'Multiplier from JSON schema', default: 2.0 },
        },
        required: ['value'],
      },
    };
    await expect(
      h.client.tools.update(tool.id, { source_code: newSource, json_schema: schema }),
    ).rejects.toMatchObject({ status: 400 });
    const renamedSchema = { ...schema, name: 'renamed_function' };
    const renamed = await h.client.tools.update(tool.id, { json_schema: renamedSchema });
    expect(renamed.json_schema).toEqual(renamedSchema);
    expect(renamed.name).toBe('renamed_function');
    await h.client.tools.delete(tool.id);
  });
});
