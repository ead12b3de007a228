import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { useAgentServer } from './helpers/agent-server';
import { startOauthMcpServer } from './helpers/oauth-mcp-server';
import { startEnterpriseIdp } from './helpers/enterprise-idp';
import { getMcpOauth } from '../src/db/mcp-oauth';
import { getMcpDpopKey } from '../src/db/mcp-dpop-keys';
import { McpOauth, type McpOauthSettings } from '../src/mcp/oauth';
import { NO_PRIVATE_ADDRESSES } from '../src/net/private-addresses';

const settings = (publicUrl: string): McpOauthSettings => ({
  publicUrl,
  stateTtlMs: 60_000,
  refreshMarginMs: 60_000,
  fetchPolicy: { timeoutMs: 10_000, maxBytes: 1 << 20, maxRedirects: 3, allow: NO_PRIVATE_ADDRESSES },
});

/**
 * DPoP-bound tokens (src/mcp/dpop.ts) with an OAuth-protected MCP server that demands them and nonces
 * (test/helpers/dpop-guard.ts checks every proof with jose): registered through the official client,
 * authorized as a browser would, its tool run.
 */
describe('DPoP with OAuth-protected MCP servers', () => {
  const h = useAgentServer('openai', { MCP_CONNECT_TIMEOUT_MS: '10000' });

  it('proves the server key on the token request and on every MCP request, the token bound to it, nonce challenges answered, and the key kept across processes', async () => {
    const target = await startOauthMcpServer({ dpop: { nonce: true } });
    try {
      const server = await h.client.mcpServers.create({
        server_name: 'dpop',
        config: { mcp_server_type: 'streamable_http', server_url: target.url } as never,
      });
      const pending = (server as { oauth_status?: { authorization_url: string } }).oauth_status!;
      expect((await fetch(pending.authorization_url)).status).toBe(200);
      const tool = (await h.client.mcpServers.tools.list(server.id!)).find((t) => t.name === 'whisper');
      const run = await h.client.mcpServers.tools.run(tool!.id!, {
        mcp_server_id: server.id!,
        args: { text: 'BOUND' },
      });
      expect(run).toMatchObject({ status: 'success', func_return: 'bound' });

      const privateJwk = (await getMcpDpopKey(h.server.db, server.id!))!;
      const thumbprint = await calculateJwkThumbprint(privateJwk);
      expect(target.dpop.boundKeys).toEqual([thumbprint]);
      expect(target.dpop.nonceChallenges.token).toBeGreaterThanOrEqual(1);
      expect(target.dpop.nonceChallenges.mcp).toBeGreaterThanOrEqual(1);
      expect(target.dpop.refused).toEqual([]);
      expect((await getMcpOauth(h.server.db, server.id!))!.tokens!.token_type).toBe('DPoP');
      const [row] = await h.server.db.query<{ private_jwk: string }>(
        'SELECT private_jwk FROM mcp_dpop_keys WHERE server_id = $1',
        [server.id],
      );
      expect(row!.private_jwk).toMatch(/^v1:/);
      expect(row!.private_jwk).not.toContain((privateJwk as JWK).d!);

      // Another process's client (its keys read from the database) presents the same bound token.
      const grants = target.grants.length;
      const provider = new McpOauth(h.server.db, settings(h.server.url)).providerFor({
        id: server.id!,
        config: { mcp_server_type: 'streamable_http', server_url: target.url },
      })!;
      const client = new Client({ name: 'another-process', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(target.url), {
        authProvider: provider,
        fetch: provider.fetchFn,
      });
      await client.connect(transport);
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('whisper');
      await client.close();
      expect(target.grants.length).toBe(grants);
      expect(target.dpop.refused).toEqual([]);
    } finally {
      await target.close();
    }
  });
});

/**
 * Enterprise-managed authorization (src/mcp/id-jag.ts): the user's ID token exchanged at a local IdP
 * for an ID-JAG, which the MCP server's authorization server takes in the JWT-bearer grant.
 */
describe('enterprise-managed authorization with OAuth-protected MCP servers', () => {
  const h = useAgentServer('openai', { MCP_CONNECT_TIMEOUT_MS: '10000' });

  it('exchanges the ID token at the IdP for an ID-JAG, gets tokens with it and no user, its secrets masked', async () => {
    const client = { client_id: 'letta-enterprise', client_secret: 'enterprise-secret-0123' };
    const idp = await startEnterpriseIdp(client.client_id);
    const target = await startOauthMcpServer({ idJag: { ...client, idp } });
    try {
      const idToken = await idp.idToken('ada@example.com', 'letta-at-idp');
      const oauth = {
        grant_type: 'id_jag',
        ...client,
        assertion: idToken,
        idp_issuer: idp.issuer,
        idp_client_id: 'letta-at-idp',
        idp_client_secret: 'idp-secret-456789',
      };
      const server = await h.client.mcpServers.create({
        server_name: 'enterprise',
        config: { mcp_server_type: 'streamable_http', server_url: target.url, oauth } as never,
      });
      expect(server).toMatchObject({
        oauth_status: { authorized: true, authorization_url: null },
        oauth: {
          client_secret: '****0123',
          idp_client_secret: '****6789',
          assertion: expect.stringMatching(/^\*{4}/),
        },
      });
      expect(idp.exchanges).toEqual([
        expect.objectContaining({
          audience: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/?$/),
          resource: target.url,
        }),
      ]);
      expect(target.grants).toEqual(['id_jag']);
      const tool = (await h.client.mcpServers.tools.list(server.id!)).find((t) => t.name === 'whisper');
      const run = await h.client.mcpServers.tools.run(tool!.id!, {
        mcp_server_id: server.id!,
        args: { text: 'SSO' },
      });
      expect(run).toMatchObject({ status: 'success', func_return: 'sso' });
      const [row] = await h.server.db.query(`SELECT config::text, secrets FROM mcp_servers WHERE id = $1`, [
        server.id,
      ]);
      expect(JSON.stringify(row)).not.toMatch(/idp-secret|enterprise-secret/);
      expect(JSON.stringify(row)).not.toContain(idToken);
    } finally {
      await target.close();
      await idp.close();
    }
  });
});
