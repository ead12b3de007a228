/**
 * An OAuth-protected MCP server made of the SDK's own server pieces: its authorization server
 * (mcpAuthRouter: metadata, dynamic client registration, authorization with PKCE, tokens and refresh)
 * on the same origin as the MCP endpoint, which requireBearerAuth guards. The authorization is
 * granted at once (no login page): the authorize endpoint redirects straight to the redirect URI with
 * a code. The client credentials grant, which the SDK's token handler leaves to applications, is
 * answered by a route of its own for the one client given.
 */
import crypto from 'node:crypto';
import type http from 'node:http';
import express, { type Request, type Response } from 'express';
import { mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import type {
  OAuthServerProvider,
  AuthorizationParams,
} from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import {
  createOAuthMetadata,
  getOAuthProtectedResourceMetadataUrl,
} from '@modelcontextprotocol/sdk/server/auth/router.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { jwtVerify, type CryptoKey } from 'jose';
import { z } from 'zod';
import { freePort } from './env';
import { statelessMcp } from './mcp-servers';
import { dpopGuard, type DpopOptions, type DpopRecord } from './dpop-guard';

export interface OauthMcpServerOptions {
  /**
   * A pre-registered client for the client credentials grant, authenticated by its secret or, given
   * its public key, by a JWT it signed (private_key_jwt).
   */
  clientCredentials?: { client_id: string; client_secret?: string; public_key?: crypto.KeyObject };
  /** How long an access token lives (seconds), as its `expires_in` says. */
  accessTokenSeconds?: number;
  /** Where the protected resource metadata says the authorization server is (hostile metadata). */
  authorizationServer?: string;
  /**
   * Enterprise-managed authorization: the JWT-bearer grant for this pre-registered client, with an
   * ID-JAG of this IdP (enterprise-idp.ts) for this server.
   */
  idJag?: { client_id: string; client_secret: string; idp: { issuer: string; publicKey: CryptoKey } };
  /** DPoP-bound tokens, advertised and demanded (dpop-guard.ts). */
  dpop?: DpopOptions;
  /** Lets `initialize` (and notifications) in without a token, as servers that guard only their tools do. */
  openInitialize?: boolean;
  /** Serves the deprecated HTTP+SSE transport (`/sse`, posts to `/messages`) instead of streamable HTTP. */
  sse?: boolean;
}

export interface OauthMcpServer {
  /** The MCP endpoint. */
  url: string;
  /** Every access token issued, and every refresh, as `grant_type`s, in order. */
  grants: string[];
  /** The `grant_type` that issued the access token of this digest (tokenDigest). */
  grantOf(digest: string): string | undefined;
  /** Every access and refresh token issued, and the secret of every client registered. */
  secrets(): string[];
  /** Refuses every access token issued so far (as a server that revoked them, or forgot them). */
  revokeAccessTokens(): void;
  /** With `dpop`: what its checks of the proofs saw. */
  dpop: DpopRecord;
  close(): Promise<void>;
}

const random = () => crypto.randomBytes(16).toString('hex');

class GrantingProvider implements OAuthServerProvider {
  readonly clients = new Map<string, OAuthClientInformationFull>();
  readonly codes = new Map<string, { client: string; params: AuthorizationParams }>();
  readonly refreshTokens = new Map<string, { client: string; scopes: string[] }>();
  readonly accessTokens = new Map<string, AuthInfo>();
  readonly grants: string[] = [];
  /** The grant of each access token issued, by the token's digest. */
  readonly grantsByDigest = new Map<string, string>();
  /** Every access and refresh token issued. */
  readonly issued: string[] = [];

  constructor(private readonly accessTokenSeconds: number) {}

  readonly clientsStore: OAuthRegisteredClientsStore = {
    getClient: (id) => this.clients.get(id),
    registerClient: (client) => {
      const full = client as OAuthClientInformationFull;
      this.clients.set(full.client_id, full);
      return full;
    },
  };

  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: Response) {
    const code = random();
    this.codes.set(code, { client: client.client_id, params });
    const target = new URL(params.redirectUri);
    target.searchParams.set('code', code);
    if (params.state !== undefined) target.searchParams.set('state', params.state);
    res.redirect(target.href);
  }

  async challengeForAuthorizationCode(_client: OAuthClientInformationFull, code: string) {
    const issued = this.codes.get(code);
    if (!issued) throw new Error('unknown code');
    return issued.params.codeChallenge;
  }

  async exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<OAuthTokens> {
    const issued = this.codes.get(code);
    if (!issued || issued.client !== client.client_id) throw new Error('unknown code');
    this.codes.delete(code);
    return this.issue('authorization_code', client.client_id, issued.params.scopes ?? [], true);
  }

  async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string): Promise<OAuthTokens> {
    const known = this.refreshTokens.get(refreshToken);
    if (!known || known.client !== client.client_id) throw new Error('unknown refresh token');
    this.refreshTokens.delete(refreshToken);
    return this.issue('refresh_token', client.client_id, known.scopes, true);
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const info = this.accessTokens.get(token);
    if (!info) throw new InvalidTokenError('unknown or revoked token');
    return info;
  }

  issue(grant: string, clientId: string, scopes: string[], refreshable: boolean): OAuthTokens {
    this.grants.push(grant);
    const access_token = random();
    this.grantsByDigest.set(tokenDigest(access_token), grant);
    const expiresAt = Math.floor(Date.now() / 1000) + this.accessTokenSeconds;
    this.accessTokens.set(access_token, { token: access_token, clientId, scopes, expiresAt });
    const refresh_token = refreshable ? random() : undefined;
    this.issued.push(access_token, ...(refresh_token ? [refresh_token] : []));
    if (refresh_token) this.refreshTokens.set(refresh_token, { client: clientId, scopes });
    return {
      access_token,
      token_type: 'bearer',
      expires_in: this.accessTokenSeconds,
      scope: scopes.join(' '),
      ...(refresh_token ? { refresh_token } : {}),
    };
  }
}

/** The digest `token_digest` answers for an access token. */
export const tokenDigest = (token: string) =>
  crypto.createHash('sha256').update(token).digest('hex').slice(0, 16);

/**
 * A server with two tools: `whisper`, that answers its `text` in lower case, and `token_digest`, that
 * answers the digest of the access token the call came with (tokenDigest).
 */
function mcpServer(): McpServer {
  const server = new McpServer({ name: 'oauth-test', version: '1.0.0' });
  server.registerTool(
    'whisper',
    { description: 'Says the text quietly.', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text: text.toLowerCase() }] }),
  );
  server.registerTool(
    'token_digest',
    { description: "The digest of the call's access token." },
    async ({ authInfo }) => ({ content: [{ type: 'text', text: tokenDigest(authInfo?.token ?? '') }] }),
  );
  return server;
}

/** Whether a compact ES256 JWT is signed with `key` and issued by and about `clientId` (RFC 7523). */
function signedBy(jwt: string, clientId: string, key: crypto.KeyObject): boolean {
  const [header, payload, signature] = jwt.split('.');
  const signed = crypto.verify(
    'sha256',
    Buffer.from(`${header}.${payload}`),
    { key, dsaEncoding: 'ieee-p1363' },
    Buffer.from(signature ?? '', 'base64url'),
  );
  const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString()) as Record<string, unknown>;
  return signed && claims.iss === clientId && claims.sub === clientId;
}

/** Whether the token request comes from the client: its secret (basic or in the body), or its JWT. */
function clientAuthenticated(req: Request, cc: NonNullable<OauthMcpServerOptions['clientCredentials']>) {
  const assertion: unknown = req.body.client_assertion;
  if (cc.public_key && typeof assertion === 'string') return signedBy(assertion, cc.client_id, cc.public_key);
  const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  const [id, secret] = basic
    ? Buffer.from(basic, 'base64').toString().split(':').map(decodeURIComponent)
    : [req.body.client_id, req.body.client_secret];
  return !!cc.client_secret && id === cc.client_id && secret === cc.client_secret;
}

export async function startOauthMcpServer(options: OauthMcpServerOptions = {}): Promise<OauthMcpServer> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const mcpUrl = new URL(`${origin}/${options.sse ? 'sse' : 'mcp'}`);
  const provider = new GrantingProvider(options.accessTokenSeconds ?? 3600);
  const app = express();
  if (options.authorizationServer) {
    app.get(`/.well-known/oauth-protected-resource${mcpUrl.pathname}`, (_req, res) => {
      res.json({ resource: mcpUrl.href, authorization_servers: [options.authorizationServer] });
    });
  }
  const cc = options.clientCredentials;
  if (cc) {
    const { client_id, client_secret } = cc;
    provider.clients.set(client_id, { client_id, client_secret, redirect_uris: [] });
    app.post('/token', express.urlencoded({ extended: false }), (req, res, next) => {
      if (req.body.grant_type !== 'client_credentials') return next();
      if (!clientAuthenticated(req, cc)) return void res.status(401).json({ error: 'invalid_client' });
      const scopes = typeof req.body.scope === 'string' ? req.body.scope.split(' ') : [];
      res.json(provider.issue('client_credentials', cc.client_id, scopes, false));
    });
  }
  const jag = options.idJag;
  if (jag) {
    const { client_id, client_secret, idp } = jag;
    provider.clients.set(client_id, { client_id, client_secret, redirect_uris: [] });
    app.post('/token', express.urlencoded({ extended: false }), async (req, res, next) => {
      if (req.body.grant_type !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return next();
      if (!clientAuthenticated(req, jag)) return void res.status(401).json({ error: 'invalid_client' });
      const granted = await jwtVerify(String(req.body.assertion), idp.publicKey, {
        issuer: idp.issuer,
        audience: [origin, `${origin}/`],
        typ: 'oauth-id-jag+jwt',
      }).catch(() => undefined);
      const { resource, client_id: named } = granted?.payload ?? {};
      if (resource !== mcpUrl.href || named !== client_id)
        return void res.status(400).json({ error: 'invalid_grant' });
      res.json(provider.issue('id_jag', client_id, [], false));
    });
  }
  const authorization = { provider, issuerUrl: new URL(origin), scopesSupported: ['mcp:tools'] };
  const resourceMetadataUrl = getOAuthProtectedResourceMetadataUrl(mcpUrl);
  const dpop = dpopGuard(options.dpop ?? {}, `${origin}/token`, mcpUrl.href, resourceMetadataUrl);
  if (options.dpop) {
    app.get('/.well-known/oauth-authorization-server', (_req, res) => {
      res.json({ ...createOAuthMetadata(authorization), dpop_signing_alg_values_supported: ['ES256'] });
    });
    app.post('/token', dpop.tokenGuard);
  }
  app.use(mcpAuthRouter({ ...authorization, resourceServerUrl: mcpUrl }));
  const bearer = options.dpop
    ? dpop.mcpGuard
    : requireBearerAuth({ verifier: provider, resourceMetadataUrl });
  const open = (req: Request) => {
    const method: unknown = req.body?.method;
    return method === 'initialize' || (typeof method === 'string' && method.startsWith('notifications/'));
  };
  const guard: express.RequestHandler = (req, res, next) =>
    options.openInitialize && open(req) ? next() : bearer(req, res, next);
  app.post('/mcp', express.json(), guard, statelessMcp(mcpServer));
  app.get('/mcp', (_req, res) => void res.status(405).end());
  const sessions = new Map<string, SSEServerTransport>();
  app.get('/sse', bearer, async (_req, res) => {
    const transport = new SSEServerTransport('/messages', res);
    sessions.set(transport.sessionId, transport);
    res.on('close', () => sessions.delete(transport.sessionId));
    await mcpServer().connect(transport);
  });
  app.post('/messages', bearer, async (req, res) => {
    const transport = sessions.get(String(req.query.sessionId));
    if (!transport) return void res.status(404).end();
    await transport.handlePostMessage(req, res);
  });
  const listener: http.Server = await new Promise((resolve) => {
    const started = app.listen(port, '127.0.0.1', () => resolve(started));
  });
  return {
    url: mcpUrl.href,
    grants: provider.grants,
    grantOf: (digest) => provider.grantsByDigest.get(digest),
    secrets: () => [
      ...provider.issued,
      ...[...provider.clients.values()].flatMap((client) => client.client_secret ?? []),
    ],
    revokeAccessTokens: () => provider.accessTokens.clear(),
    dpop: dpop.record,
    close: () =>
      new Promise((resolve) => {
        listener.closeAllConnections();
        listener.close(() => resolve());
      }),
  };
}
