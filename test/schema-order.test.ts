import fs from 'node:fs';
import path from 'node:path';
import { useAgentServer } from './helpers/agent-server';

const FIXTURES = path.join(__dirname, 'fixtures', 'letta-schemas');
const fixture = (name: string) => fs.readFileSync(path.join(FIXTURES, name), 'utf8');
const keys = (schema: unknown) =>
  Object.keys((schema as { parameters: { properties: object } }).parameters.properties);

/**
 * Tool schemas keep their signature's order, stored and sent (a model fills arguments in the order it
 * is given them): Letta's schema fixtures (letta-ai/letta tests/test_tool_schema_parsing_files).
 */
describe('tool schemas in signature order', () => {
  const h = useAgentServer('openai');

  it.each(['all_python_complex', 'all_python_complex_nodict', 'list_of_pydantic_example', 'simple_d20'])(
    '%s comes back, and goes to the model, in signature order',
    async (name) => {
      const expected = JSON.parse(fixture(`${name}.json`));
      const tool = await h.client.tools.upsert({ source_code: fixture(`${name}.py`) });
      expect(keys(tool.json_schema)).toEqual(keys(expected));
      expect(tool.json_schema).toEqual(expected);
      expect(keys((await h.client.tools.retrieve(tool.id)).json_schema)).toEqual(keys(expected));

      const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
      h.stub.enqueue({ text: 'ok' });
      await h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: 'hi' }] });
      const sent = h.stub.requests.at(-1)!.tools!.find((t) => t.function.name === tool.name)!;
      expect(Object.keys(sent.function.parameters as object)).toContain('properties');
      expect(keys({ parameters: sent.function.parameters })).toEqual(keys(expected));
    },
  );

  it('sends a schema Letta cannot make strict (a bare dict parameter) non-strict to a strict agent', async () => {
    const complex = await h.client.tools.upsert({ source_code: fixture('all_python_complex.py') });
    const simple = await h.client.tools.upsert({ source_code: fixture('simple_d20.py') });
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tool_ids: [complex.id, simple.id],
      llm_config: {
        model: 'gpt-4o-mini',
        model_endpoint_type: 'openai',
        context_window: 128000,
        strict: true,
      },
    });
    h.stub.enqueue({ text: 'ok' });
    await h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: 'hi' }] });
    const sent = h.stub.requests.at(-1)!.tools!;
    const byName = (name: string) => sent.find((t) => t.function.name === name)!.function;
    expect(byName('check_order_status').strict).toBeUndefined();
    expect(byName('check_order_status').parameters).toEqual(
      JSON.parse(fixture('all_python_complex_so.json')).parameters,
    );
    expect(byName('roll_d20').strict).toBe(true);
  });

  it.each([
    'all_python_complex_nodict',
    'list_of_pydantic_example',
    'nested_pydantic_as_arg_example',
    'pydantic_as_single_arg_example',
    'simple_d20',
  ])('sends %s to a strict agent exactly as Letta converts it (its _so.json)', async (name) => {
    const expected = JSON.parse(fixture(`${name}_so.json`));
    const tool = await h.client.tools.upsert({
      source_code: fixture(`${name}.py`),
      json_schema: JSON.parse(fixture(`${name}.json`)),
    });
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tool_ids: [tool.id],
      include_base_tools: false,
      model_settings: { provider_type: 'openai', strict: true } as never,
    });
    h.stub.enqueue({ text: 'ok' });
    await h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: 'hi' }] });
    const [sent] = h.stub.requests.at(-1)!.tools!;
    expect(sent.function).toMatchObject({ name: expected.name, strict: true });
    expect(JSON.stringify(sent.function.parameters)).toBe(JSON.stringify(expected.parameters));
  });
});
