/**
 * Letta's client-side access tokens through the official client: made, listed and revoked with the
 * server's password; a token reaches only the agents its policy names, with the access it grants, on
 * every route (the routes as the app registers them, so a route added later is covered), and fails at
 * once when revoked or expired.
 */
import http from 'node:http';
import Letta from '@letta-ai/letta-client';
import { useAgentServer } from './helpers/agent-server';
import { registeredRoutes } from './helpers/routes';
import { eventually } from './helpers/eventually';

const PASSWORD = 'a password for the token tests';

type Access = 'read_messages' | 'write_messages' | 'read_agent' | 'write_agent';
const EVERY_ACCESS: Access[] = ['read_messages', 'write_messages', 'read_agent', 'write_agent'];

/** A raw request, for routes the client has no method for and for headers it would not send. */
function request(
  base: string,
  pathname: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      new URL(pathname, base),
      {
        method: options.method ?? 'GET',
        headers: { 'content-type': 'application/json', ...options.headers },
      },
      (res) => {
        let body = '';
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('client-side access tokens', () => {
  const h = useAgentServer('openai', { LETTA_SERVER_PASSWORD: PASSWORD, AUTH_FAILURE_LIMIT: '1000' });
  let admin: Letta;
  let agentA: string;
  let agentB: string;
  const clientWith = (token: string) => new Letta({ baseURL: h.server.url, apiKey: token, maxRetries: 0 });
  const tokenFor = async (agentId: string, access: Access[], extra: { expires_at?: string } = {}) =>
    (
      await admin.accessTokens.create({
        hostname: 'https://app.example.com',
        policy: [{ type: 'agent', id: agentId, access }],
        ...extra,
      })
    ).token;

  beforeAll(async () => {
    admin = new Letta({ baseURL: h.server.url, apiKey: PASSWORD, maxRetries: 0 });
    const create = (name: string) =>
      admin.agents.create({
        name,
        model: 'openai/gpt-4o-mini',
        memory_blocks: [{ label: 'human', value: `Name of ${name}'s human` }],
      });
    agentA = (await create('a')).id;
    agentB = (await create('b')).id;
  });

  it('are made, listed without their secret and kept only as a hash', async () => {
    const made = await admin.accessTokens.create({
      hostname: 'https://app.example.com',
      policy: [{ type: 'agent', id: agentA, access: ['read_agent'] }],
    });
    expect(made.token).toMatch(/^lct-[0-9a-f]{16}-[\w-]{43}$/);
    expect(made.policy).toEqual({
      version: '1',
      data: [{ type: 'agent', id: agentA, access: ['read_agent'] }],
    });
    // Letta's default: five minutes.
    const ttl = new Date(made.expiresAt).getTime() - Date.now();
    expect(ttl).toBeGreaterThan(240_000);
    expect(ttl).toBeLessThanOrEqual(300_000);

    const id = made.token.slice(0, 20);
    const listed = await admin.accessTokens.list({ agentId: agentA, limit: 100 });
    expect(listed.tokens.map((t) => t.token)).toContain(id);
    expect(JSON.stringify(listed)).not.toContain(made.token);
    const others = await admin.accessTokens.list({ agentId: agentB });
    expect(others.tokens.map((t) => t.token)).not.toContain(id);

    const secret = made.token.slice(21);
    const [row] = await h.server.db.query<Record<string, unknown>>(
      'SELECT * FROM access_tokens WHERE id = $1',
      [id],
    );
    expect(JSON.stringify(row)).not.toContain(secret);
  });

  it('refuses a token for an agent that does not exist, and an expiry in the past or too far ahead', async () => {
    const make = (id: string, expires_at?: string) =>
      admin.accessTokens.create({
        hostname: 'https://app.example.com',
        policy: [{ type: 'agent', id, access: ['read_agent'] }],
        ...(expires_at ? { expires_at } : {}),
      });
    await expect(make('agent-00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({ status: 404 });
    await expect(make(agentA, new Date(Date.now() - 1000).toISOString())).rejects.toMatchObject({
      status: 400,
    });
    await expect(make(agentA, new Date(Date.now() + 400 * 86_400_000).toISOString())).rejects.toMatchObject({
      status: 400,
    });
    // A body the schema refuses: 422, as Letta's FastAPI answers it.
    await expect(
      admin.accessTokens.create({
        hostname: 'app.example.com',
        policy: [{ type: 'agent', id: agentA, access: [] }],
      }),
    ).rejects.toMatchObject({ status: 422 });
  });

  it('reaches its own agent with the access it grants, and nothing else', async () => {
    const reader = clientWith(await tokenFor(agentA, ['read_agent']));
    expect((await reader.agents.retrieve(agentA)).id).toBe(agentA);
    expect((await reader.agents.blocks.retrieve('human', { agent_id: agentA })).value).toContain('a');
    await expect(reader.agents.retrieve(agentB)).rejects.toMatchObject({ status: 403 });
    await expect(
      reader.agents.blocks.update('human', { agent_id: agentA, value: 'no' }),
    ).rejects.toMatchObject({
      status: 403,
    });
    await expect(reader.agents.messages.list(agentA)).rejects.toMatchObject({ status: 403 });
    await expect(reader.agents.list()).rejects.toMatchObject({ status: 403 });
    await expect(reader.tools.list()).rejects.toMatchObject({ status: 403 });
    await expect(reader.accessTokens.list()).rejects.toMatchObject({ status: 403 });

    const writer = clientWith(await tokenFor(agentA, ['read_agent', 'write_agent']));
    await writer.agents.blocks.update('human', { agent_id: agentA, value: 'Changed by a token' });
    expect((await admin.agents.blocks.retrieve('human', { agent_id: agentA })).value).toBe(
      'Changed by a token',
    );
    await expect(
      writer.agents.blocks.update('human', { agent_id: agentB, value: 'no' }),
    ).rejects.toMatchObject({
      status: 403,
    });
    expect((await admin.agents.blocks.retrieve('human', { agent_id: agentB })).value).not.toBe('no');
  });

  it("reads its agent's runs and conversations, and answers another agent's as not found", async () => {
    h.stub.enqueue({ text: 'Hello A.' }, { text: 'Hello B.' });
    const runA = (await admin.agents.messages.create(agentA, { messages: [{ role: 'user', content: 'hi' }] }))
      .messages[0].run_id!;
    const runB = (await admin.agents.messages.create(agentB, { messages: [{ role: 'user', content: 'hi' }] }))
      .messages[0].run_id!;
    const conversationB = await admin.conversations.create({ agent_id: agentB });
    const token = clientWith(await tokenFor(agentA, ['read_messages']));
    expect((await token.runs.retrieve(runA)).agent_id).toBe(agentA);
    expect((await token.agents.messages.list(agentA)).items.length).toBeGreaterThan(0);
    await expect(token.runs.retrieve(runB)).rejects.toMatchObject({ status: 404 });
    // Lists of runs and conversations, when they name one of its agents.
    const runs = (await token.runs.list({ agent_id: agentA })).getPaginatedItems();
    expect(runs.map((run) => run.agent_id)).toEqual(runs.map(() => agentA));
    expect(runs.map((run) => run.id)).toContain(runA);
    await expect(token.runs.list({ agent_id: agentB })).rejects.toMatchObject({ status: 403 });
    await expect(token.runs.list()).rejects.toMatchObject({ status: 403 });
    await expect(token.conversations.list({ agent_id: agentB })).rejects.toMatchObject({ status: 403 });
    expect(await token.conversations.list({ agent_id: agentA })).toBeDefined();
    await expect(token.conversations.create({ agent_id: agentA })).rejects.toMatchObject({ status: 403 });
    await expect(token.conversations.retrieve(conversationB.id)).rejects.toMatchObject({ status: 404 });
    await expect(
      token.agents.messages.create(agentA, { messages: [{ role: 'user', content: 'no' }] }),
    ).rejects.toMatchObject({ status: 403 });
  });

  it('is refused on every route that is not its agent’s, and on those that reach past its agent', async () => {
    const token = await tokenFor(agentA, EVERY_ACCESS);
    const headers = { authorization: `Bearer ${token}` };
    const unknown = (param: string) => `${param}-00000000-0000-4000-8000-000000000000`;
    // Health and the MCP OAuth callback and client metadata are open to all, credentials or not.
    // The approval stream stays open: its filtering is the listing's, tried here.
    const open = [
      '/v1/health',
      '/v1/approvals/stream',
      '/v1/tools/mcp/oauth/callback',
      '/v1/tools/mcp/oauth/client-metadata.json',
    ];
    const routes = registeredRoutes().filter(({ path }) => path.startsWith('/v1/') && !open.includes(path));
    expect(routes.length).toBeGreaterThan(100);
    const answers: { method: string; path: string; status: number }[] = [];
    for (const { method, path } of routes) {
      const own = /^\/v1\/agents\/:agentId/.test(path);
      // On its own agent only the routes that reach past it are tried: the rest would act.
      const pastOwnAgent = own && /\/attach\/|\/files\/:fileId\/open|\/tools\/:toolName\/run/.test(path);
      if (own && !pastOwnAgent) continue;
      const url = path.replace(/:(\w+)/g, (_, param: string) =>
        param === 'agentId' ? (pastOwnAgent ? agentA : agentB) : unknown(param),
      );
      const { status } = await request(h.server.url, url, {
        method: method.toUpperCase(),
        headers,
        body: ['get', 'delete'].includes(method) ? undefined : '{}',
      });
      answers.push({ method, path, status });
    }
    // The approval inbox lists what the token's agents wait for (none here) instead of refusing.
    const expected = ({ path }: { path: string }) =>
      path === '/v1/approvals' ? 200 : /^\/v1\/(runs|conversations|approvals)\/:/.test(path) ? 404 : 403;
    expect(answers.filter((answer) => answer.status !== expected(answer))).toEqual([]);
  });

  it('cannot widen its reach through its agent: no blocks of others by id, no tags it lacks', async () => {
    const agent = clientWith(await tokenFor(agentA, EVERY_ACCESS)).agents;
    const [otherBlock] = (await admin.agents.blocks.list(agentB)).getPaginatedItems();
    await expect(agent.update(agentA, { block_ids: [otherBlock.id] })).rejects.toMatchObject({ status: 403 });
    // Tags decide which agents a sandboxed call's token reaches.
    await expect(agent.update(agentA, { tags: ['admins'] })).rejects.toMatchObject({ status: 403 });
    expect((await agent.update(agentA, { description: 'Edited with a token', tags: [] })).description).toBe(
      'Edited with a token',
    );
    const blocks = (await admin.agents.blocks.list(agentA)).getPaginatedItems();
    expect(blocks.map((b) => b.id)).not.toContain(otherBlock.id);
  });

  it('fails at once when revoked, and after it expires', async () => {
    const token = await tokenFor(agentA, ['read_agent']);
    const client = clientWith(token);
    expect((await client.agents.retrieve(agentA)).id).toBe(agentA);
    await admin.accessTokens.delete(token.slice(0, 20));
    await expect(client.agents.retrieve(agentA)).rejects.toMatchObject({ status: 401 });
    await expect(admin.accessTokens.delete(token)).rejects.toMatchObject({ status: 404 });

    const brief = clientWith(
      await tokenFor(agentA, ['read_agent'], { expires_at: new Date(Date.now() + 1_500).toISOString() }),
    );
    expect((await brief.agents.retrieve(agentA)).id).toBe(agentA);
    await eventually(
      () =>
        brief.agents.retrieve(agentA).then(
          () => 200,
          (error: { status: number }) => error.status,
        ),
      (status) => status === 401,
      10_000,
    );
  });

  it('is refused from a browser page of another site than the one it was made for', async () => {
    const token = await tokenFor(agentA, ['read_agent']);
    const from = (origin: string) =>
      request(h.server.url, `/v1/agents/${agentA}`, {
        headers: { authorization: `Bearer ${token}`, origin },
      });
    // The server's own origin passes the origin check; the token was made for another app.
    expect((await from(h.server.url)).status).toBe(401);
    expect(
      (await request(h.server.url, `/v1/agents/${agentA}`, { headers: { authorization: `Bearer ${token}` } }))
        .status,
    ).toBe(200);
  });
});

describe('client-side access tokens on a server without a password', () => {
  const h = useAgentServer('openai');

  it('restrict a request that carries one to what they grant, as with a password', async () => {
    const create = (name: string) => h.client.agents.create({ name, model: 'openai/gpt-4o-mini' });
    const [a, b] = [await create('a'), await create('b')];
    const { token } = await h.client.accessTokens.create({
      hostname: 'https://app.example.com',
      policy: [{ type: 'agent', id: a.id, access: ['read_agent'] }],
    });
    const scoped = new Letta({ baseURL: h.server.url, apiKey: token, maxRetries: 0 });
    expect((await scoped.agents.retrieve(a.id)).id).toBe(a.id);
    await expect(scoped.agents.retrieve(b.id)).rejects.toMatchObject({ status: 403 });
    await h.client.accessTokens.delete(token);
    await expect(scoped.agents.retrieve(a.id)).rejects.toMatchObject({ status: 401 });
  });
});
