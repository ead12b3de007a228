import { getToolVersion } from '../src/db/tools';
import { useAgentServer } from './helpers/agent-server';

const weather = (summary: string) => `def get_weather(city: str, days: int = 1) -> str:
    """${summary}

    Args:
        city (str): The city to look up.
        days (int): How many days ahead.
    """
    return f"Sunny in {city}"
`;

type ToolWithHealth = { health: { status: string; reasons: string[] }; version: number };

describe('custom tools through the official Letta client', () => {
  const h = useAgentServer('openai');

  it('creates a tool from Python source, and upserts it by name as a new version', async () => {
    const created = await h.client.tools.create({ source_code: weather('Gets the weather.') });
    expect(created).toMatchObject({
      id: expect.stringMatching(/^tool-/),
      name: 'get_weather',
      tool_type: 'custom',
      source_type: 'python',
      description: 'Gets the weather.',
      return_char_limit: 50000,
      json_schema: {
        name: 'get_weather',
        description: 'Gets the weather.',
        parameters: {
          type: 'object',
          properties: {
            city: { type: 'string', description: 'The city to look up.' },
            days: { type: 'integer', description: 'How many days ahead.' },
          },
          required: ['city'],
        },
      },
    });
    expect((created as unknown as ToolWithHealth).health.status).toBe('NON_STRICT_ONLY');
    expect((created as unknown as ToolWithHealth).version).toBe(1);

    const upserted = await h.client.tools.upsert({ source_code: weather('Gets the forecast.') });
    expect(upserted.id).toBe(created.id);
    expect(upserted.description).toBe('Gets the forecast.');
    expect((upserted as unknown as ToolWithHealth).version).toBe(2);
    // The version a turn started with stays readable after the change.
    const first = await getToolVersion(h.server.db, created.id, 1);
    expect(first?.description).toBe('Gets the weather.');

    const modified = await h.client.tools.update(created.id, { tags: ['weather'], return_char_limit: 1000 });
    expect(modified).toMatchObject({
      tags: ['weather'],
      return_char_limit: 1000,
      description: 'Gets the forecast.',
    });

    const listed = (await h.client.tools.list({ name: 'get_weather' })).getPaginatedItems();
    expect(listed.map((t) => t.id)).toEqual([created.id]);
    const searched = (await h.client.tools.list({ search: 'weath' })).getPaginatedItems();
    expect(searched.map((t) => t.name)).toContain('get_weather');
    const custom = (await h.client.tools.list({ tool_types: ['custom'] })).getPaginatedItems();
    expect(custom.every((t) => t.tool_type === 'custom')).toBe(true);
  });

  it("refuses new source with a json_schema naming another function, and renames by a schema alone (Letta's test)", async () => {
    const tool = await h.client.tools.create({
      source_code:
        'def initial_tool(x: int) -> int:\n    """Doubles.\n\n    Args:\n        x: A number\n    """\n    return x * 2\n',
    });
    const schema = {
      name: 'custom_schema_name',
      description: 'Multiplies.',
      parameters: { type: 'object', properties: { value: { type: 'number' } }, required: ['value'] },
    };
    const renamedSource =
      'def renamed_function(value: float) -> float:\n    """Multiplies."""\n    return value * 2\n';
    await expect(
      h.client.tools.update(tool.id, { source_code: renamedSource, json_schema: schema }),
    ).rejects.toMatchObject({ status: 400 });
    expect((await h.client.tools.retrieve(tool.id)).name).toBe('initial_tool');
    const renamed = await h.client.tools.update(tool.id, {
      json_schema: { ...schema, name: 'renamed_function' },
    });
    expect(renamed.name).toBe('renamed_function');
    await h.client.tools.delete(tool.id);
  });

  it('takes an explicit json_schema, or one built from args_json_schema', async () => {
    const schema = {
      name: 'ts_echo',
      description: 'Echoes.',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    };
    const ts = await h.client.tools.create({
      source_code: 'export function ts_echo({ text }) { return text; }',
      source_type: 'typescript',
      json_schema: schema,
    });
    expect(ts.json_schema).toEqual(schema);

    const fromArgs = await h.client.tools.create({
      source_code: 'def shout(text):\n    """Shouts the text."""\n    return text.upper()\n',
      args_json_schema: {
        title: 'ShoutArgs',
        type: 'object',
        properties: { text: { title: 'Text', type: 'string', description: 'What to shout.' } },
        required: ['text'],
      },
    });
    expect(fromArgs.json_schema).toEqual({
      name: 'shout',
      description: 'Shouts the text.',
      parameters: {
        type: 'object',
        properties: { text: { type: 'string', description: 'What to shout.' } },
        required: ['text'],
      },
    });
  });

  it('refuses what cannot make a tool, with Letta-shaped errors', async () => {
    await expect(
      h.client.tools.create({ source_code: 'def f(x: int) -> int:\n    return x\n' }),
    ).rejects.toMatchObject({
      status: 400,
      error: {
        detail: 'Failed to derive json schema: Schema generation failed: Function f missing docstring',
      },
    });
    await expect(
      h.client.tools.create({ source_code: 'export const x = 1', source_type: 'typescript' }),
    ).rejects.toMatchObject({ status: 422 });
    await expect(
      h.client.tools.create({
        source_code: 'x',
        source_type: 'typescript',
        json_schema: { name: 'bad', description: 'Bad.', parameters: { type: 'string' } },
      }),
    ).rejects.toMatchObject({
      status: 400,
      error: { detail: "Invalid tool schema for 'bad': parameters: the top level must be of type 'object'" },
    });
    await expect(
      h.client.tools.create({ source_code: 'def memory_insert() -> str:\n    """Mine now."""\n' }),
    ).rejects.toMatchObject({ status: 409 });
  });

  it('attaches a tool to an agent (bringing its approval default), offers it to the model, and detaches it', async () => {
    const tool = await h.client.tools.create({
      source_code: weather('Gets the weather.').replace('get_weather', 'get_weather_checked'),
      default_requires_approval: true,
    });
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    expect(await h.client.agents.tools.attach(tool.id, { agent_id: agent.id })).toBeNull();
    const attached = await h.client.agents.retrieve(agent.id, { include: ['agent.tools'] });
    expect(attached.tools.map((t) => t.name)).toContain('get_weather_checked');
    expect(attached.tool_rules).toEqual([{ type: 'requires_approval', tool_name: 'get_weather_checked' }]);

    const before = h.stub.requests.length;
    h.stub.enqueue({ toolCalls: [{ name: 'get_weather_checked', arguments: { city: 'Oslo' } }] });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
    });
    const offered = h.stub.requests[before].tools!.find((t) => t.function.name === 'get_weather_checked');
    expect(offered?.function.parameters).toEqual(tool.json_schema!.parameters);
    expect(response.stop_reason.stop_reason).toBe('requires_approval');
    await h.client.agents.messages.cancel(agent.id);

    await h.client.agents.tools.detach(tool.id, { agent_id: agent.id });
    const detached = await h.client.agents.retrieve(agent.id, { include: ['agent.tools'] });
    expect(detached.tools.map((t) => t.name)).not.toContain('get_weather_checked');

    await h.client.tools.delete(tool.id);
    await expect(h.client.tools.retrieve(tool.id)).rejects.toMatchObject({ status: 404 });
  });

  it('refuses a turn of an agent whose tool is of a type no execution mode runs, never running it as a sandboxed tool', async () => {
    const tool = await h.client.tools.create({
      source_code: weather('Gets the weather.').replace('get_weather', 'get_weather_elsewhere'),
    });
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    await h.client.agents.tools.attach(tool.id, { agent_id: agent.id });
    // As a database written by another version may hold it: tool types enter by our own code alone.
    await h.server.db.query(`UPDATE tools SET tool_type = 'external_composio' WHERE id = $1`, [tool.id]);

    const before = h.stub.requests.length;
    await expect(
      h.client.agents.messages.create(agent.id, {
        messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      }),
    ).rejects.toMatchObject({
      status: 409,
      error: {
        detail: expect.stringContaining(
          "Tool 'get_weather_elsewhere' is of type 'external_composio', which no execution mode of this server runs",
        ),
      },
    });
    expect(h.stub.requests.length).toBe(before);
  });
});
