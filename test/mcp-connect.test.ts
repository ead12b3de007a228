import { useAgentServer } from './helpers/agent-server';
import { startOauthMcpServer, type OauthMcpServer } from './helpers/oauth-mcp-server';

type ConnectEvent = { event: string; url?: string; tools?: { name: string }[]; message?: string };

/**
 * Letta's connect stream (src/api/routes/mcp-connect.ts): a registered server reached again, and an
 * OAuth-protected one authorized by a user while the stream waits, as Letta's UI drives it.
 */
describe('GET /v1/mcp-servers/connect/{id}', () => {
  const h = useAgentServer('openai', { MCP_CONNECT_TIMEOUT_MS: '10000' });
  let target: OauthMcpServer;
  beforeEach(async () => {
    target = await startOauthMcpServer();
  });
  afterEach(async () => {
    for (const server of await h.client.mcpServers.list()) await h.client.mcpServers.delete(server.id!);
    await target.close();
  });

  const register = (server_name: string) =>
    h.client.mcpServers.create({
      server_name,
      config: { mcp_server_type: 'streamable_http', server_url: target.url } as never,
    });

  /** Reads the stream's events, calling `onEvent` for each, until it ends. */
  async function readEvents(id: string, onEvent: (event: ConnectEvent) => Promise<void> = async () => {}) {
    const response = await fetch(`${h.server.url}/v1/mcp-servers/connect/${id}`);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events: ConnectEvent[] = [];
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of response.body!) {
      buffered += decoder.decode(chunk, { stream: true });
      const frames = buffered.split('\n\n');
      buffered = frames.pop()!;
      for (const frame of frames) {
        const event = JSON.parse(frame.replace(/^data: /, '')) as ConnectEvent;
        events.push(event);
        await onEvent(event);
      }
    }
    return events;
  }

  it('waits while a user authorizes, then answers the tools it stored', async () => {
    const server = await register('protected');
    expect(await h.client.mcpServers.tools.list(server.id!)).toEqual([]);

    const events = await readEvents(server.id!, async (event) => {
      if (event.event === 'authorization_url') expect((await fetch(event.url!)).status).toBe(200);
    });

    expect(events.map((e) => e.event)).toEqual([
      'connection_attempt',
      'oauth_required',
      'authorization_url',
      'waiting_for_auth',
      'success',
    ]);
    const names = events.at(-1)!.tools!.map((tool) => tool.name);
    expect(names.length).toBeGreaterThan(0);
    const stored = await h.client.mcpServers.tools.list(server.id!);
    expect(stored.map((tool) => tool.name).sort()).toEqual([...names].sort());

    // Authorized now: the stream connects at once.
    expect((await readEvents(server.id!)).map((e) => e.event)).toEqual(['connection_attempt', 'success']);
  });

  it('a client that leaves while it waits ends the stream; an unknown server is a 404', async () => {
    const server = await register('left');
    const leaving = new AbortController();
    const response = await fetch(`${h.server.url}/v1/mcp-servers/connect/${server.id}`, {
      signal: leaving.signal,
    });
    const reader = response.body!.getReader();
    let seen = '';
    while (!seen.includes('waiting_for_auth')) seen += new TextDecoder().decode((await reader.read()).value);
    leaving.abort();
    expect((await fetch(`${h.server.url}/v1/health/`)).status).toBe(200);

    const missing = await fetch(
      `${h.server.url}/v1/mcp-servers/connect/mcp_server-00000000-0000-4000-8000-000000000000`,
    );
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ detail: expect.stringContaining('not found') });
  });
});
