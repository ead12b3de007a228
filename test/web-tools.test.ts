import { useAgentServer } from './helpers/agent-server';
import { toolReturnsOf } from './helpers/tool-returns';
import { startExaServer, type ExaServer } from './helpers/exa-server';
import { webSearch } from '../src/tools/builtin/web-search';
import { NO_EXA_KEY } from '../src/tools/builtin/exa';

const PAGES = [
  {
    url: 'https://temporal.io/blog/durable-execution',
    title: 'Durable execution explained',
    text: 'Durable execution keeps workflows running through crashes. Temporal replays the history.',
    publishedDate: '2025-03-01T00:00:00.000Z',
    author: 'Temporal',
  },
  { url: 'https://example.com/cooking', title: 'Pasta at home', text: 'Boil water. Add salt and pasta.' },
];

/** Letta's web_search and fetch_webpage through Exa's own SDK, against a server that speaks Exa's API. */
describe('web_search and fetch_webpage', () => {
  let exa: ExaServer;
  const env: Record<string, string> = { EXA_API_KEY: 'exa-test-key' };
  beforeAll(async () => {
    exa = await startExaServer({ pages: PAGES });
    env.EXA_BASE_URL = exa.baseURL;
  });
  afterAll(() => exa?.close());
  const h = useAgentServer('openai', env);

  /** One message in which the model calls `tool` with `args`; the tool's return as the agent stored it. */
  const callTool = async (agentId: string, tool: string, args: Record<string, unknown>) => {
    h.stub.enqueue({ toolCalls: [{ name: tool, arguments: args }] }, { text: 'done' });
    const response = await h.client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'go' }],
    });
    const result = toolReturnsOf(response.messages)[0];
    return { status: result?.status, text: String(result?.tool_return) };
  };

  it('searches with Letta’s parameters and answers in Letta’s format', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tools: ['web_search'] });
    exa.requests.length = 0;
    const { status, text } = await callTool(agent.id, 'web_search', {
      query: 'durable execution',
      num_results: 500,
      include_domains: ['temporal.io'],
      category: 'news',
    });
    expect(status).toBe('success');
    const answer = JSON.parse(text);
    expect(answer.query).toBe('durable execution');
    expect(answer.results).toEqual([
      expect.objectContaining({
        title: 'Durable execution explained',
        url: 'https://temporal.io/blog/durable-execution',
        published_date: '2025-03-01T00:00:00.000Z',
        author: 'Temporal',
        highlights: expect.any(Array),
        summary: expect.any(String),
      }),
    ]);
    expect(answer.results[0].text).toBeUndefined();
    expect(exa.requests[0]).toMatchObject({
      path: '/search',
      headers: { 'x-api-key': 'exa-test-key' },
      body: {
        query: 'durable execution',
        numResults: 100,
        type: 'auto',
        category: 'news',
        includeDomains: ['temporal.io'],
        contents: { highlights: { numSentences: 2, highlightsPerUrl: 3, query: 'durable execution' } },
      },
    });
  });

  it('uses the agent’s own EXA_API_KEY before the server’s, and reports a refused search to the model', async () => {
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tools: ['web_search'],
      secrets: { EXA_API_KEY: 'not-a-valid-key' },
    });
    const { status, text } = await callTool(agent.id, 'web_search', { query: 'pasta', include_text: true });
    expect(status).toBe('success');
    expect(JSON.parse(text)).toEqual({ query: 'pasta', error: 'Search failed: Invalid API key' });
  });

  it('fetches a page through Exa’s contents, and the page itself when Exa has none', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tools: ['fetch_webpage'] });
    const viaExa = await callTool(agent.id, 'fetch_webpage', { url: 'https://example.com/cooking' });
    expect(JSON.parse(viaExa.text)).toEqual({
      title: 'Pasta at home',
      published_date: null,
      author: null,
      text: 'Boil water. Add salt and pasta.',
    });
    // Unknown to Exa: fetched directly, where the address checks refuse a private address.
    const direct = await callTool(agent.id, 'fetch_webpage', {
      url: 'http://169.254.169.254/latest/meta-data/',
    });
    expect(direct.status).toBe('error');
    expect(direct.text).toMatch(/Error fetching webpage/);
    const file = await callTool(agent.id, 'fetch_webpage', { url: 'file:///etc/passwd' });
    expect(file.text).toMatch(/Invalid URL scheme 'file'/);
  });

  it('Letta’s hello-world agent uses each built-in it was created with', async () => {
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      embedding: 'openai/text-embedding-3-small',
      tools: ['web_search', 'run_code', 'fetch_webpage', 'archival_memory_insert', 'archival_memory_search'],
    });
    const calls: [string, Record<string, unknown>][] = [
      ['web_search', { query: 'durable execution' }],
      ['fetch_webpage', { url: 'https://example.com/cooking' }],
      ['run_code', { code: 'print(6 * 7)', language: 'python' }],
      ['archival_memory_insert', { content: 'Durable execution survives crashes' }],
      ['archival_memory_search', { query: 'durable execution' }],
    ];
    h.stub.enqueue(...calls.map(([name, args]) => ({ toolCalls: [{ name, arguments: args }] })), {
      text: 'done',
    });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'use everything' }],
    });
    const returns = toolReturnsOf(response.messages);
    expect(returns.map((r) => r.status)).toEqual(['success', 'success', 'success', 'success', 'success']);
    expect(JSON.parse(returns[0].tool_return).results[0].title).toBe('Durable execution explained');
    expect(JSON.parse(returns[1].tool_return).title).toBe('Pasta at home');
    expect(JSON.parse(returns[2].tool_return).logs.stdout).toEqual(['42\n']);
    expect(JSON.parse(returns[4].tool_return)[0].content).toBe('Durable execution survives crashes');
  });

  it('without a key, tells which setting to set; an empty query is the model’s to fix', async () => {
    const settings = { baseUrl: exa.baseURL, timeoutMs: 1000 };
    await expect(webSearch(undefined, settings, { query: 'x' })).rejects.toThrow(NO_EXA_KEY);
    expect(JSON.parse(await webSearch(undefined, settings, { query: ' ' }))).toEqual({
      error: 'Query cannot be empty',
      query: ' ',
    });
  });
});
