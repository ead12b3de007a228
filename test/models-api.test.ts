import Letta from '@letta-ai/letta-client';
import { startAnthropicStub, type AnthropicStub } from './helpers/anthropic-stub';
import { startOpenAiStub, type OpenAiStub } from './helpers/openai-stub';
import { startTestServer, type TestServer } from './helpers/server';

describe('models, as Letta lists them', () => {
  let openai: OpenAiStub;
  let anthropic: AnthropicStub;
  let server: TestServer;
  let client: Letta;

  beforeAll(async () => {
    [openai, anthropic] = await Promise.all([startOpenAiStub(), startAnthropicStub()]);
    server = await startTestServer({
      OPENAI_BASE_URL: openai.baseURL,
      OPENAI_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: anthropic.baseURL,
      ANTHROPIC_API_KEY: 'test-key',
    });
    client = new Letta({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.stopAll();
    await Promise.all([openai?.close(), anthropic?.close()]);
  });

  it('lists the language models every configured provider serves, with their context windows', async () => {
    const models = await client.models.list();
    expect(models.map((m) => m.handle)).toEqual([
      'openai/gpt-4o-mini',
      'openai/local-llama',
      'anthropic/claude-sonnet-4-5',
    ]);
    expect(models[0]).toMatchObject({
      name: 'gpt-4o-mini',
      model: 'gpt-4o-mini',
      provider_type: 'openai',
      model_endpoint_type: 'openai',
      model_endpoint: openai.baseURL,
      context_window: 128_000,
      max_context_window: 128_000,
    });
    expect(models[2]).toMatchObject({ provider_type: 'anthropic', context_window: 200_000 });
  });

  it('lists the embedding models apart', async () => {
    expect(await client.models.embeddings.list()).toEqual([
      expect.objectContaining({
        handle: 'openai/text-embedding-3-small',
        embedding_model: 'text-embedding-3-small',
        embedding_dim: 1536,
        embedding_endpoint_type: 'openai',
      }),
    ]);
  });

  it('leaves out a provider that cannot be listed now, and lists the others', async () => {
    await anthropic.close();
    expect((await client.models.list()).map((m) => m.provider_type)).toEqual(['openai', 'openai']);
  });
});

describe("Letta's base tools", () => {
  let server: TestServer;
  beforeAll(async () => (server = await startTestServer({ OPENAI_API_KEY: 'k' })));
  afterAll(() => server?.stopAll());

  it('refuses an agent naming tools that do not exist with Letta’s text, and add-base-tools returns the built-ins', async () => {
    const client = new Letta({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
    await expect(
      client.agents.create({ model: 'openai/gpt-4o-mini', tools: ['web_searchx', 'fetch_webpage', 'nope'] }),
    ).rejects.toMatchObject({
      status: 400,
      error: { detail: "Tools not found by name: {'nope', 'web_searchx'}" },
    });
    const res = await fetch(`${server.url}/v1/tools/add-base-tools`, { method: 'POST' });
    expect(res.status).toBe(200);
    const tools = (await res.json()) as { name: string; tool_type: string }[];
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['memory_insert', 'conversation_search', 'fetch_webpage']),
    );
    expect(tools.every((t) => t.tool_type !== 'custom')).toBe(true);
  });
});
