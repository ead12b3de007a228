import { useAgentServer } from './helpers/agent-server';
import { startOauthMcpServer, tokenDigest, type OauthMcpServer } from './helpers/oauth-mcp-server';
import { getMcpOauth } from '../src/db/mcp-oauth';

interface OauthStatus {
  authorized: boolean;
  authorization_url: string | null;
}

/**
 * An OAuth-protected MCP server whose tokens are kept per identity (`oauth.per_identity`,
 * src/mcp/oauth.ts): each identity authorizes on its own (POST /v1/mcp-servers/{id}/oauth/authorize),
 * each agent's call carries its identity's token, and an identity that has not authorized gets a tool
 * error saying where to, never another's token.
 */
describe('MCP OAuth per identity', () => {
  const h = useAgentServer('openai', { MCP_CONNECT_TIMEOUT_MS: '10000', MCP_RECONNECT_INITIAL_MS: '100' });
  let target: OauthMcpServer;
  beforeAll(async () => {
    target = await startOauthMcpServer();
  });
  afterAll(() => target?.close());
  afterEach(async () => {
    for (const server of await h.client.mcpServers.list()) await h.client.mcpServers.delete(server.id!);
  });

  /** Follows an authorization URL as a browser would, to this server's callback; its status. */
  const authorize = async (url: string) => (await fetch(url)).status;

  const startAuthorization = (serverId: string, body: Record<string, unknown>) =>
    h.client.post<OauthStatus>(`/v1/mcp-servers/${serverId}/oauth/authorize`, { body });

  const newIdentity = async (key: string) =>
    (
      await h.client.post<{ id: string }>('/v1/identities', {
        body: { identifier_key: key, name: key, identity_type: 'user' },
      })
    ).id;

  /** The agent's step calls `token_digest`; its tool return. */
  const digestCall = async (agentId: string) => {
    h.stub.enqueue({ toolCalls: [{ name: 'token_digest', arguments: {} }] });
    h.stub.enqueue({ text: 'Done.' });
    const response = await h.client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'Which token?' }],
    });
    return response.messages.find((m) => m.message_type === 'tool_return_message') as
      { status: string; tool_return: string } | undefined;
  };

  it("each identity authorizes on its own, each agent's call carries its identity's token, one without gets where to authorize", async () => {
    const server = await h.client.mcpServers.create({
      server_name: 'per-identity',
      config: {
        mcp_server_type: 'streamable_http',
        server_url: target.url,
        oauth: { per_identity: true },
      } as never,
    });
    // The server's own authorization lists its tools.
    const own = (server as { oauth_status?: OauthStatus }).oauth_status!;
    expect(await authorize(own.authorization_url!)).toBe(200);
    const tool = (await h.client.mcpServers.tools.list(server.id!)).find((t) => t.name === 'token_digest')!;

    const [ada, bob, cy] = [await newIdentity('ada'), await newIdentity('bob'), await newIdentity('cy')];
    const agentOf = async (identity?: string) => {
      const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id!] });
      if (identity) await h.client.agents.identities.attach(identity, { agent_id: agent.id });
      return agent.id;
    };
    const [adaAgent, bobAgent, cyAgent, nobody] = [
      await agentOf(ada),
      await agentOf(bob),
      await agentOf(cy),
      await agentOf(),
    ];

    for (const identity of [ada, bob]) {
      const pending = await startAuthorization(server.id!, { identity_id: identity });
      expect(pending).toEqual({ authorized: false, authorization_url: expect.stringMatching(/^http/) });
      expect(await authorize(pending.authorization_url!)).toBe(200);
      expect(await startAuthorization(server.id!, { identity_id: identity })).toEqual({
        authorized: true,
        authorization_url: null,
      });
    }

    const digestOf = async (identity?: string) =>
      tokenDigest((await getMcpOauth(h.server.db, server.id!, identity))!.tokens!.access_token);
    const serversOwn = await digestOf();
    for (const [agent, identity] of [
      [adaAgent, ada],
      [bobAgent, bob],
    ] as const) {
      const answer = await digestCall(agent);
      expect(answer).toMatchObject({ status: 'success', tool_return: await digestOf(identity) });
      expect(answer!.tool_return).not.toBe(serversOwn);
    }
    expect(await digestOf(ada)).not.toBe(await digestOf(bob));

    // Cy has not authorized: the tool's error says where to, and no token is sent for Cy.
    const issued = target.grants.length;
    const refused = await digestCall(cyAgent);
    expect(refused?.status).toBe('error');
    expect(refused?.tool_return).toContain(`identity ${cy} has not authorized this MCP server yet`);
    expect(refused?.tool_return).toContain(
      `POST ${h.server.url}/v1/mcp-servers/${server.id}/oauth/authorize with {"identity_id": "${cy}"}`,
    );
    expect(target.grants.length).toBe(issued);
    const cyPending = await startAuthorization(server.id!, { identity_id: cy });
    expect(await authorize(cyPending.authorization_url!)).toBe(200);
    expect(await digestCall(cyAgent)).toMatchObject({ status: 'success', tool_return: await digestOf(cy) });

    // An agent with no identity has none to act for.
    expect((await digestCall(nobody))?.tool_return).toMatch(
      /needs exactly one identity to act for, and has 0/,
    );

    // A deleted identity's tokens go with it.
    await h.client.delete(`/v1/identities/${ada}`);
    expect(await getMcpOauth(h.server.db, server.id!, ada)).toBeUndefined();
    expect(await getMcpOauth(h.server.db, server.id!, bob)).toBeDefined();
  });

  it("a server that does not authorize per identity: an agent's identity calls with the server's token, and is refused for its authorization (400); an unknown identity is a 404", async () => {
    const server = await h.client.mcpServers.create({
      server_name: 'shared',
      config: { mcp_server_type: 'streamable_http', server_url: target.url } as never,
    });
    const own = (server as { oauth_status?: OauthStatus }).oauth_status!;
    expect(await authorize(own.authorization_url!)).toBe(200);
    const identity = await newIdentity('dee');
    const tool = (await h.client.mcpServers.tools.list(server.id!)).find((t) => t.name === 'token_digest')!;
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id!] });
    await h.client.agents.identities.attach(identity, { agent_id: agent.id });
    const serversOwn = tokenDigest((await getMcpOauth(h.server.db, server.id!))!.tokens!.access_token);
    expect(await digestCall(agent.id)).toMatchObject({ status: 'success', tool_return: serversOwn });

    const refused = await startAuthorization(server.id!, { identity_id: identity }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 400 });

    const perIdentity = await h.client.mcpServers.create({
      server_name: 'per-identity-too',
      config: {
        mcp_server_type: 'streamable_http',
        server_url: target.url,
        oauth: { per_identity: true },
      } as never,
    });
    const unknown = await startAuthorization(perIdentity.id!, {
      identity_id: 'identity-00000000-0000-4000-8000-000000000000',
    }).catch((e: unknown) => e);
    expect(unknown).toMatchObject({ status: 404 });
  });
});
