import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import pino from 'pino';
import { useAgentServer } from './helpers/agent-server';
import { freePort } from './helpers/env';
import {
  startOauthMcpServer,
  type OauthMcpServer,
  type OauthMcpServerOptions,
} from './helpers/oauth-mcp-server';
import { connectTemporalClient, finishedTurnHistory, payloadTexts, turnWorkflowId } from './helpers/temporal';
import { getMcpOauth } from '../src/db/mcp-oauth';
import { projectRoot } from '../src/paths';

interface OauthStatus {
  authorized: boolean;
  authorization_url: string | null;
}

const statusOf = (server: unknown) => (server as { oauth_status?: OauthStatus }).oauth_status;

/** The SDK's example server with its in-memory authorization server (`--oauth`), as a process. */
async function startSdkExample(): Promise<{ url: string; child: ChildProcess }> {
  const [mcpPort, authPort] = [await freePort(), await freePort()];
  const example = path.join(
    projectRoot,
    'node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js',
  );
  const child = spawn(process.execPath, [example, '--oauth'], {
    env: { PATH: process.env.PATH ?? '', MCP_PORT: String(mcpPort), MCP_AUTH_PORT: String(authPort) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let said = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      said += String(chunk);
      if (/Server listening/.test(said) && /Authorization Server listening/.test(said)) resolve();
    });
    child.on('exit', (code) => reject(new Error(`the SDK's example server exited (${code}): ${said}`)));
  });
  return { url: `http://localhost:${mcpPort}/mcp`, child };
}

/**
 * OAuth-protected MCP servers (src/mcp/oauth.ts): registered through the official client, the
 * authorization URL it answers followed as a browser would (the test authorization servers grant at
 * once and redirect to this server's callback), their tools then run by the model (the stub).
 */
describe('OAuth-protected MCP servers', () => {
  // Every line the server logs, down to debug: no token or secret may be among them.
  const logged: string[] = [];
  const h = useAgentServer(
    'openai',
    { MCP_CONNECT_TIMEOUT_MS: '10000', MCP_RECONNECT_INITIAL_MS: '100' },
    'postgres',
    pino({ level: 'debug' }, { write: (line: string) => logged.push(line) }),
  );
  const closers: (() => unknown)[] = [];
  afterEach(async () => {
    for (const server of await h.client.mcpServers.list()) await h.client.mcpServers.delete(server.id!);
    await Promise.all(closers.splice(0).map((close) => close()));
  });

  const oauthServer = async (options?: OauthMcpServerOptions): Promise<OauthMcpServer> => {
    const server = await startOauthMcpServer(options);
    closers.push(() => server.close());
    return server;
  };

  const register = (
    server_name: string,
    server_url: string,
    oauth?: Record<string, string>,
    mcp_server_type = 'streamable_http',
  ) =>
    h.client.mcpServers.create({
      server_name,
      config: { mcp_server_type, server_url, ...(oauth ? { oauth } : {}) } as never,
    });

  /** Follows the authorization URL to this server's callback; its answer. */
  const authorize = async (url: string) => {
    const response = await fetch(url);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  /** Registers the server and completes its authorization code flow. */
  const registerAuthorized = async (name: string, url: string, type?: string) => {
    const server = await register(name, url, undefined, type);
    expect(await authorize(statusOf(server)!.authorization_url!)).toMatchObject({ status: 200 });
    return server;
  };

  const toolOf = async (serverId: string, name: string) =>
    (await h.client.mcpServers.tools.list(serverId)).find((tool) => tool.name === name)!;

  const runTool = async (serverId: string, name: string, args: Record<string, unknown>) =>
    h.client.mcpServers.tools.run((await toolOf(serverId, name)).id!, { mcp_server_id: serverId, args });

  it("the SDK's example server: authorization code flow with the official client, its tool run in an agent step, its tokens encrypted and kept out of answers and histories", async () => {
    const example = await startSdkExample();
    closers.push(() => example.child.kill('SIGKILL'));

    const server = await register('example', example.url);
    const pending = statusOf(server)!;
    expect(pending.authorized).toBe(false);
    const authorizationUrl = new URL(pending.authorization_url!);
    expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorizationUrl.searchParams.get('redirect_uri')).toBe(
      `${h.server.url}/v1/tools/mcp/oauth/callback`,
    );
    expect(await h.client.mcpServers.tools.list(server.id!)).toEqual([]);

    const callback = await authorize(authorizationUrl.href);
    expect(callback).toEqual({
      status: 200,
      body: { status: 'success', message: 'Authorization successful', server_url: example.url },
    });
    const shown = await h.client.mcpServers.retrieve(server.id!);
    expect(statusOf(shown)).toEqual({ authorized: true, authorization_url: null });

    const greet = await toolOf(server.id!, 'greet');
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [greet.id!] });
    h.stub.enqueue({ toolCalls: [{ name: 'greet', arguments: { name: 'Ada' } }] });
    h.stub.enqueue({ text: 'Done.' });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Greet Ada.' }],
    });
    const toolReturn = response.messages.find((m) => m.message_type === 'tool_return_message');
    expect(toolReturn).toMatchObject({
      status: 'success',
      tool_return: expect.stringContaining('Hello, Ada!'),
    });

    const { access_token } = (await getMcpOauth(h.server.db, server.id!))!.tokens!;
    const [row] = await h.server.db.query('SELECT * FROM mcp_oauth WHERE server_id = $1', [server.id]);
    expect(String(row.tokens)).toMatch(/^v1:/);
    expect(JSON.stringify(row)).not.toContain(access_token);
    expect(JSON.stringify(await h.client.mcpServers.list())).not.toContain(access_token);
    const temporal = await connectTemporalClient();
    try {
      const workflowId = await turnWorkflowId(h.server.db, response.messages[0].run_id!);
      const events = await finishedTurnHistory(temporal.client, workflowId);
      expect(payloadTexts(events).filter((text) => text.includes(access_token))).toEqual([]);
    } finally {
      await temporal.close();
    }
  });

  it('the callback acts only with a live state, once: a forged, reused or expired one is a 400', async () => {
    const target = await oauthServer();
    const server = await register('once', target.url);
    // Where the authorization server sends the browser back.
    const granted = await fetch(statusOf(server)!.authorization_url!, { redirect: 'manual' });
    const callback = new URL(granted.headers.get('location')!);
    expect(callback.origin + callback.pathname).toBe(`${h.server.url}/v1/tools/mcp/oauth/callback`);

    const forged = new URL(callback);
    forged.searchParams.set('state', 'forged-state');
    const answers = async (url: URL) => {
      const response = await fetch(url);
      return { status: response.status, body: await response.json() };
    };
    expect(await answers(forged)).toEqual({
      status: 400,
      body: { detail: 'This authorization is unknown, used or expired' },
    });
    const stateless = new URL(callback);
    stateless.searchParams.delete('state');
    expect((await answers(stateless)).status).toBe(400);
    expect((await answers(callback)).status).toBe(200);
    expect(await answers(callback)).toMatchObject({ status: 400 });
    expect((await runTool(server.id!, 'whisper', { text: 'ONCE' })).func_return).toBe('once');

    const late = await register('late', (await oauthServer()).url);
    await h.server.db.query(
      `UPDATE mcp_oauth SET state_expires_at = now() - interval '1 second' WHERE server_id = $1`,
      [late.id],
    );
    expect((await authorize(statusOf(late)!.authorization_url!)).status).toBe(400);
  });

  it('refreshes an access token the server refuses (401), and one about to expire before it is sent', async () => {
    const revoking = await oauthServer();
    const server = await registerAuthorized('revoking', revoking.url);
    revoking.revokeAccessTokens();
    expect(await runTool(server.id!, 'whisper', { text: 'AGAIN' })).toMatchObject({
      status: 'success',
      func_return: 'again',
    });
    expect(revoking.grants).toEqual(['authorization_code', 'refresh_token']);
    await h.client.mcpServers.delete(server.id!); // its tool's name is taken while it stays

    // Its tokens live 30 s, within the default margin of 60 s: each use renews them first.
    const expiring = await oauthServer({ accessTokenSeconds: 30 });
    const short = await registerAuthorized('short', expiring.url);
    const presented = [];
    for (let use = 0; use < 2; use++)
      presented.push(String((await runTool(short.id!, 'token_digest', {})).func_return));
    expect(presented.map((digest) => expiring.grantOf(digest))).toEqual(['refresh_token', 'refresh_token']);
    expect(new Set(presented).size).toBe(2);
  });

  it('an SSE server: authorized by code, refreshed on 401, its tokens never logged', async () => {
    const target = await oauthServer({ sse: true });
    const server = await registerAuthorized('sse', target.url, 'sse');
    expect(statusOf(await h.client.mcpServers.retrieve(server.id!))).toMatchObject({ authorized: true });
    expect((await runTool(server.id!, 'whisper', { text: 'OVER SSE' })).func_return).toBe('over sse');
    target.revokeAccessTokens();
    expect((await runTool(server.id!, 'whisper', { text: 'AGAIN' })).func_return).toBe('again');
    expect(target.grants).toEqual(['authorization_code', 'refresh_token']);

    const secrets = target.secrets();
    // Two access tokens and two refresh tokens (the client registered itself as a public one: no secret).
    expect(secrets).toHaveLength(4);
    expect(logged.length).toBeGreaterThan(0);
    const log = logged.join('');
    expect(secrets.filter((secret) => log.includes(secret))).toEqual([]);
  });

  it('client credentials: registered with no user, the secret encrypted and masked', async () => {
    const client = { client_id: 'letta-machine', client_secret: 'cc-secret-0123456789' };
    const target = await oauthServer({ clientCredentials: client });
    const server = await register('machine', target.url, { grant_type: 'client_credentials', ...client });
    expect(statusOf(server)).toEqual({ authorized: true, authorization_url: null });
    expect(server).toMatchObject({ oauth: { client_id: 'letta-machine', client_secret: '****6789' } });
    expect(target.grants).toEqual(['client_credentials']);
    expect((await runTool(server.id!, 'whisper', { text: 'HUSH' })).func_return).toBe('hush');

    const [row] = await h.server.db.query(
      `SELECT s.config::text, s.secrets, o.tokens FROM mcp_servers s JOIN mcp_oauth o ON o.server_id = s.id
       WHERE s.id = $1`,
      [server.id],
    );
    const { access_token } = (await getMcpOauth(h.server.db, server.id!))!.tokens!;
    expect(JSON.stringify(row)).not.toMatch(new RegExp(`cc-secret|${access_token}`));
    expect(logged.join('')).not.toMatch(new RegExp(`cc-secret|${access_token}`));
  });

  it('client credentials with private_key_jwt: the token request signed by the key, which is encrypted and masked', async () => {
    const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const target = await oauthServer({
      clientCredentials: { client_id: 'letta-signer', public_key: publicKey },
    });
    const oauth = { grant_type: 'client_credentials', client_id: 'letta-signer' };
    const server = await register('signer', target.url, {
      ...oauth,
      private_key_pem: pem,
      signing_algorithm: 'ES256',
    });
    expect(statusOf(server)).toEqual({ authorized: true, authorization_url: null });
    expect((server as { oauth?: Record<string, unknown> }).oauth?.private_key_pem).toMatch(/^\*{4}/);
    const [row] = await h.server.db.query(`SELECT config::text, secrets FROM mcp_servers WHERE id = $1`, [
      server.id,
    ]);
    expect(JSON.stringify(row)).not.toContain('PRIVATE KEY');
  });

  it('serves its client ID metadata document, whose client_id is its own URL', async () => {
    const url = `${h.server.url}/v1/tools/mcp/oauth/client-metadata.json`;
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      client_id: url,
      redirect_uris: [`${h.server.url}/v1/tools/mcp/oauth/callback`],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'none',
    });
  });

  it('refuses metadata that sends the OAuth requests to a private address', async () => {
    const hostile = await oauthServer({ authorizationServer: 'http://10.255.255.1/' });
    // Stored, as a server not reached is (stored first, connected when used), with why it failed.
    const server = await register('hostile', hostile.url);
    const { connection } = server as unknown as { connection: { status: string; last_error: string } };
    expect(connection.status).toBe('failed');
    expect(connection.last_error).toMatch(/10\.255\.255\.1 is a private address/);
    expect(statusOf(server)?.authorization_url ?? null).toBeNull();
    await expect(h.client.mcpServers.tools.list(server.id!)).rejects.toMatchObject({
      status: 424,
      message: expect.stringMatching(/10\.255\.255\.1 is a private address/),
    });
  });
});
