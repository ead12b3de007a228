/**
 * OAuth 2.1 for protected MCP servers, as the MCP authorization spec has it, done by the SDK's client
 * (`auth()` and the transports' `authProvider`: discovery with the 2025-03-26 fallbacks, dynamic client
 * registration, client ID metadata documents, PKCE, scope selection and step-up, refresh on 401). This
 * module is the SDK's OAuthClientProvider kept in the database (db/mcp-oauth.ts), per server and, where
 * its config says `per_identity`, per identity: every process reads the tokens another one refreshed,
 * and the authorization code flow's redirect comes back to this server's callback
 * (api/routes/mcp-oauth.ts), which any API process may answer. DPoP-bound tokens (dpop.ts) and
 * enterprise-managed authorization (id-jag.ts) are added to the SDK's flows here.
 */
import crypto from 'node:crypto';
import {
  auth,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { createPrivateKeyJwtAuth } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Database } from '../db/database';
import {
  getMcpOauth,
  saveMcpOauth,
  takePendingAuthorization,
  type McpOauthRecord,
  type PendingAuthorization,
  type PendingOwner,
} from '../db/mcp-oauth';
import type { McpServerConfig } from '../schemas/mcp-server';
import { safeFetch, type OutboundPolicy } from '../net/safe-fetch';
import { withHostAllowed } from '../net/private-addresses';
import { DpopKeys, dpopFetch, dpopTokenEndpoint, isDpopBound, type DpopBinding } from './dpop';
import { requestIdJag } from './id-jag';

/** Where the authorization server sends the user back to (Letta's static callback path). */
export const CALLBACK_PATH = '/v1/tools/mcp/oauth/callback';
/** This server's client ID metadata document (SEP-991), served without the password. */
export const CLIENT_METADATA_PATH = '/v1/tools/mcp/oauth/client-metadata.json';

const CLIENT_NAME = 'Letta (letta-temporal)';
/** RFC 7523's grant type: tokens for a JWT (a workload's identity) given as the assertion. */
const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

export interface McpOauthSettings {
  /** The API's public address: the redirect URI's and the client metadata document's base. */
  publicUrl: string;
  /** How long a pending authorization's state is accepted by the callback. */
  stateTtlMs: number;
  /** Tokens that expire within this are refreshed before they are used. */
  refreshMarginMs: number;
  /** Every OAuth request (metadata, registration, token) is made under it (net/safe-fetch.ts). */
  fetchPolicy: OutboundPolicy;
}

type HttpConfig = Extract<McpServerConfig, { server_url: string }>;

export interface OauthServer {
  id: string;
  config: HttpConfig;
  /** The identity its tokens are kept for (`oauth.per_identity`); none: the server's own. */
  identityId?: string;
}

/** A registered server, and the identity a call acts for where its tokens are kept per identity. */
export interface OauthServerRef {
  id: string;
  config: McpServerConfig;
  identityId?: string;
}

const digest = (state: string) => crypto.createHash('sha256').update(state).digest('hex');

/** The scopes of both lists, once each (SEP-2350: a step-up keeps what was granted before). */
function scopeUnion(...scopes: (string | undefined)[]): string | undefined {
  const all = new Set(scopes.flatMap((scope) => scope?.split(' ').filter(Boolean) ?? []));
  return all.size ? [...all].join(' ') : undefined;
}

/**
 * Two issuer identifiers compared as URLs, so scheme and host case, a default port or the "/" the
 * SDK's URL handling gives a pathless authorization server URL do not count as a difference.
 */
function sameIssuer(a: string, b: string): boolean {
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return a === b;
  }
}

/** An https address with a path: what the spec accepts as a client ID metadata document's URL. */
const isDocumentUrl = (url: string) => /^https:\/\/[^/]+\/.+/.test(url);

/**
 * OpenID's application type (MCP's SEP-837): a server reached on a loopback address is a native
 * client (its redirect URI is http on localhost), one reached on any other address a web client.
 */
function applicationTypeOf(publicUrl: string): 'native' | 'web' {
  const host = new URL(publicUrl).hostname;
  return host === 'localhost' || host === '[::1]' || /^127\./.test(host) ? 'native' : 'web';
}

/** This server's client metadata, as registered (DCR) or published (its client ID metadata document). */
export function clientMetadataOf(publicUrl: string, scope?: string | null): OAuthClientMetadata {
  return {
    client_name: CLIENT_NAME,
    redirect_uris: [new URL(CALLBACK_PATH, publicUrl).href],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    // Not in the SDK's type, which the registration request sends whole.
    ...{ application_type: applicationTypeOf(publicUrl) },
    ...(isDocumentUrl(publicUrl) ? { client_uri: publicUrl } : {}),
    ...(scope ? { scope } : {}),
  };
}

/**
 * The fetch the transports get: the MCP server's own traffic goes out as it always does, every other
 * request (the OAuth ones: metadata, registration, tokens) through safeFetch, its addresses judged by
 * OUTBOUND_ALLOW_PRIVATE with the MCP server's own host allowed, so metadata that points at another
 * private address (the cloud metadata service, the database) is refused.
 */
export function oauthFetch(serverUrl: URL, policy: OutboundPolicy): FetchLike {
  const guarded = { ...policy, allow: withHostAllowed(policy.allow, serverUrl.hostname) };
  return async (input, init) => {
    const url = new URL(String(input instanceof Request ? input.url : input));
    const ownTraffic = url.origin === serverUrl.origin && !url.pathname.startsWith('/.well-known/');
    if (ownTraffic) return fetch(input, init);
    const body = init?.body === undefined || init.body === null ? undefined : String(init.body);
    const answer = await safeFetch(url, {
      ...guarded,
      headers: Object.fromEntries(new Headers(init?.headers)),
      body,
      signal: init?.signal ?? undefined,
      followRedirects: init?.redirect !== 'manual',
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers))
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    // safeFetch has decoded the body, and may have cut it.
    headers.delete('content-encoding');
    headers.delete('content-length');
    const noBody = [204, 205, 304].includes(answer.status);
    return new Response(noBody ? null : new Uint8Array(answer.body), { status: answer.status, headers });
  };
}

/**
 * The SDK's OAuthClientProvider for one MCP server (and identity), kept in the database.
 * `authorizationUrl` is set when the SDK asks to send a user to authorize (the authorization code
 * flow); the API answers it. The transports ask for the tokens on every request: they come from the
 * row as this provider last read it, read again after this provider changes it and at the start of
 * every `auth()` run (a 401, a step-up, a renewal), so tokens another process refreshed are the ones
 * a 401 here renews from.
 */
export class StoredOauthProvider implements OAuthClientProvider {
  /** Set when this provider asked for a user's authorization. */
  authorizationUrl?: URL;
  /** The row as last read; none: read it on next use. */
  private cached?: Promise<McpOauthRecord | undefined>;
  /** The renewal ahead of expiry under way: every request meanwhile waits for its tokens. */
  private renewal?: Promise<OAuthTokens | undefined>;
  /**
   * Set for a code exchange, which redeems the code at the authorization server its flow began with.
   * Every other `auth()` discovers afresh, so a server that names a new authorization server
   * (SEP-2352) is followed there.
   */
  useCachedDiscovery = false;

  /** The fetch of its OAuth requests and of the MCP requests, with DPoP proofs where due. */
  readonly fetchFn: FetchLike;
  /** What the flow under way discovered: its token endpoint's DPoP support, an ID-JAG's audience. */
  private discovered?: OAuthDiscoveryState;
  /** The access token last read or saved, if DPoP-bound: a request presenting it carries a proof. */
  private dpopBoundToken?: string;

  constructor(
    private readonly db: Database,
    private readonly settings: McpOauthSettings,
    private readonly server: OauthServer,
    baseFetch: FetchLike,
    private readonly dpopKeys: DpopKeys,
    /** The row, when the caller has just read it. */
    stored?: McpOauthRecord,
  ) {
    this.fetchFn = dpopFetch(baseFetch, this.dpopBinding(), dpopKeys.nonces);
    if (stored) this.cached = Promise.resolve(stored);
  }

  private stored(): Promise<McpOauthRecord | undefined> {
    const read = (this.cached ??= getMcpOauth(this.db, this.server.id, this.server.identityId));
    read.catch(() => this.cached === read && (this.cached = undefined));
    return read;
  }

  private async save(change: McpOauthRecord & { pending?: PendingAuthorization | null }): Promise<void> {
    try {
      await saveMcpOauth(this.db, this.server.id, change, this.server.identityId);
    } finally {
      this.cached = undefined;
    }
  }

  /** Whether the tokens expire within the margin and can be renewed. */
  private renewable(stored: McpOauthRecord | undefined): boolean {
    const expiresSoon =
      stored?.tokensExpireAt && stored.tokensExpireAt.getTime() - Date.now() < this.settings.refreshMarginMs;
    return !!expiresSoon && !!(stored?.tokens?.refresh_token || this.userless);
  }

  private dpopBinding(): DpopBinding {
    const key = () => this.dpopKeys.of(this.server.id);
    return {
      tokenEndpointKey: (url) => {
        const endpoint = dpopTokenEndpoint(this.discovered?.authorizationServerMetadata);
        return endpoint && new URL(endpoint).href === url.href ? key() : undefined;
      },
      boundKey: (accessToken) => (accessToken === this.dpopBoundToken ? key() : undefined),
    };
  }

  /** Notes whether the tokens the transport is about to present are DPoP-bound. */
  private presented(tokens: OAuthTokens | undefined): OAuthTokens | undefined {
    this.dpopBoundToken = tokens && isDpopBound(tokens.token_type) ? tokens.access_token : undefined;
    return tokens;
  }

  private get oauth() {
    return this.server.config.oauth ?? {};
  }

  /**
   * A grant with no user (client credentials, a workload's JWT, an enterprise's identity assertion): no
   * redirect, tokens asked for at once.
   */
  private get userless() {
    const grant = this.oauth.grant_type;
    return !!grant && grant !== 'authorization_code';
  }

  get redirectUrl(): string | undefined {
    return this.userless ? undefined : new URL(CALLBACK_PATH, this.settings.publicUrl).href;
  }

  get clientMetadataUrl(): string | undefined {
    if (this.oauth.client_metadata_url) return this.oauth.client_metadata_url;
    const own = new URL(CLIENT_METADATA_PATH, this.settings.publicUrl).href;
    return isDocumentUrl(own) ? own : undefined;
  }

  get clientMetadata(): OAuthClientMetadata {
    const metadata = clientMetadataOf(this.settings.publicUrl, this.oauth.scope);
    if (!this.userless) return metadata;
    const grant = this.oauth.grant_type === 'client_credentials' ? 'client_credentials' : JWT_BEARER_GRANT;
    return { ...metadata, grant_types: [grant], redirect_uris: [], response_types: [] };
  }

  state(): string {
    return crypto.randomBytes(32).toString('base64url');
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    const { client_id, client_secret, issuer } = this.oauth;
    if (client_id)
      return { client_id, ...(client_secret ? { client_secret } : {}), ...(issuer ? { issuer } : {}) };
    return (await this.stored())?.clientInformation;
  }

  async saveClientInformation(clientInformation: OAuthClientInformationMixed): Promise<void> {
    if (!this.oauth.client_id) await this.save({ clientInformation });
  }

  /**
   * The stored tokens, renewed first when they expire within the margin and can be renewed. Requests
   * made while a renewal is under way wait for it and present what it brings.
   */
  async tokens(): Promise<OAuthTokens | undefined> {
    const stored = await this.stored();
    if (!this.renewable(stored)) return this.presented(stored?.tokens);
    this.renewal ??= this.renew().finally(() => (this.renewal = undefined));
    return this.presented(await this.renewal);
  }

  /** Renews the tokens unless the row, read again, has tokens another process renewed. */
  private async renew(): Promise<OAuthTokens | undefined> {
    this.cached = undefined;
    const stored = await this.stored();
    if (!this.renewable(stored)) return stored?.tokens;
    const metadataUrl = stored?.discovery?.resourceMetadataUrl;
    try {
      await auth(this.readingStoredTokens(), {
        serverUrl: this.server.config.server_url,
        resourceMetadataUrl: metadataUrl ? new URL(metadataUrl) : undefined,
        fetchFn: this.fetchFn,
      });
    } catch {
      // The stored tokens are tried as they are; a 401 then starts the SDK's own recovery.
    }
    return (await this.stored())?.tokens;
  }

  /** This provider as a renewal's `auth()` uses it: the tokens it reads are the stored ones, as they are. */
  private readingStoredTokens(): OAuthClientProvider {
    const storedTokens = async () => this.presented((await this.stored())?.tokens);
    return new Proxy(this, {
      get: (target, name) => {
        if (name === 'tokens') return storedTokens;
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    this.presented(tokens);
    const tokensExpireAt = tokens.expires_in ? new Date(Date.now() + tokens.expires_in * 1000) : null;
    await this.save({ tokens, tokensExpireAt });
  }

  /**
   * Records the authorization a user is to give: the state's digest (the callback finds the server by
   * it), its expiry, and the URL, whose scope keeps what the current tokens were granted.
   */
  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    const state = authorizationUrl.searchParams.get('state');
    if (!state) throw new Error('the authorization URL carries no state');
    const granted = (await this.stored())?.tokens?.scope;
    const scope = scopeUnion(granted, authorizationUrl.searchParams.get('scope') ?? undefined);
    if (scope) authorizationUrl.searchParams.set('scope', scope);
    const pending = {
      stateDigest: digest(state),
      expiresAt: new Date(Date.now() + this.settings.stateTtlMs),
      authorizationUrl: authorizationUrl.href,
    };
    await this.save({ pending });
    this.authorizationUrl = authorizationUrl;
  }

  async saveCodeVerifier(codeVerifier: string): Promise<void> {
    await this.save({ codeVerifier });
  }

  async codeVerifier(): Promise<string> {
    const verifier = (await this.stored())?.codeVerifier;
    if (!verifier) throw new Error('no authorization is pending for this MCP server');
    return verifier;
  }

  /**
   * A grant with no user asks for its tokens here: client credentials, or the JWT-bearer grant
   * (RFC 7523 §2.1) with the workload's JWT of the config as its assertion, or with the ID-JAG the
   * enterprise's IdP issues for the user's ID token (id_jag); the authorization code flow by default.
   */
  async prepareTokenRequest(scope?: string): Promise<URLSearchParams | undefined> {
    const scoped: Record<string, string> = scope ? { scope } : {};
    const { grant_type, assertion } = this.oauth;
    if (grant_type === 'client_credentials')
      return new URLSearchParams({ grant_type: 'client_credentials', ...scoped });
    if (grant_type !== 'jwt_bearer' && grant_type !== 'id_jag') return undefined;
    if (!assertion) throw new Error(`the ${grant_type} grant needs its assertion in oauth.assertion`);
    const grant = grant_type === 'id_jag' ? await this.idJag(assertion, scope) : assertion;
    return new URLSearchParams({ grant_type: JWT_BEARER_GRANT, assertion: grant, ...scoped });
  }

  /** The ID-JAG for the user's ID token, for the authorization server and resource discovered. */
  private idJag(idToken: string, scope?: string): Promise<string> {
    const { idp_issuer, idp_token_endpoint, idp_client_id, idp_client_secret } = this.oauth;
    const metadata = this.discovered?.authorizationServerMetadata;
    if (!idp_client_id) throw new Error('the id_jag grant needs oauth.idp_client_id');
    if (!metadata) throw new Error('the id_jag grant needs the authorization server metadata');
    const resource = this.discovered?.resourceMetadata?.resource ?? this.server.config.server_url;
    return requestIdJag(
      {
        idpIssuer: idp_issuer,
        idpTokenEndpoint: idp_token_endpoint,
        idpClientId: idp_client_id,
        idpClientSecret: idp_client_secret,
        idToken,
        audience: metadata.issuer,
        resource,
        scope,
      },
      this.fetchFn,
    );
  }

  /**
   * private_key_jwt client authentication (RFC 7523 §2.2) when the config gives a private key: the
   * SDK signs an assertion with it for every token request, issued by and about the client ID.
   */
  get addClientAuthentication() {
    const { client_id, private_key_pem, signing_algorithm } = this.oauth;
    if (!client_id || !private_key_pem) return undefined;
    const alg = signing_algorithm ?? 'RS256';
    return createPrivateKeyJwtAuth({
      issuer: client_id,
      subject: client_id,
      privateKey: private_key_pem,
      alg,
    });
  }

  /**
   * Keeps what discovery found. Authorization server metadata whose issuer is not the one it was
   * looked up for is refused (RFC 8414 §3.3: its endpoints may be anyone's). A server that now names
   * another authorization server (SEP-2352) drops the registration and tokens the previous one gave,
   * so the client registers again there and presents nothing of the old one.
   */
  async saveDiscoveryState(discovery: OAuthDiscoveryState): Promise<void> {
    const { authorizationServerUrl, authorizationServerMetadata: metadata } = discovery;
    if (metadata && !sameIssuer(metadata.issuer, authorizationServerUrl))
      throw new Error(
        `The authorization server metadata of ${authorizationServerUrl} names another issuer (${metadata.issuer}): not used`,
      );
    const previous = (await this.stored())?.discovery?.authorizationServerUrl;
    if (previous && !sameIssuer(previous, authorizationServerUrl)) await this.invalidateCredentials('all');
    await this.save({ discovery });
    this.discovered = discovery;
  }

  /**
   * Every `auth()` run asks for this first: the row is read again from here on, so a run after a 401
   * renews from what another process may have stored meanwhile.
   */
  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    this.cached = undefined;
    if (!this.useCachedDiscovery) return undefined;
    this.discovered = (await this.stored())?.discovery;
    return this.discovered;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    const all = scope === 'all';
    await this.save({
      ...(all || scope === 'client' ? { clientInformation: undefined } : {}),
      ...(all || scope === 'tokens' ? { tokens: undefined, tokensExpireAt: null } : {}),
      ...(all || scope === 'verifier' ? { codeVerifier: undefined } : {}),
      ...(all || scope === 'discovery' ? { discovery: undefined } : {}),
    });
  }
}

/** A pending authorization's callback came with a state that is unknown, used or expired. */
export class OauthStateError extends Error {
  override name = 'OauthStateError';
}

/** The OAuth side of MCP connections: providers for servers, and the callback's completion. */
export class McpOauth {
  private readonly dpopKeys: DpopKeys;

  constructor(
    private readonly db: Database,
    readonly settings: McpOauthSettings,
  ) {
    this.dpopKeys = new DpopKeys(db);
  }

  /**
   * A provider for an HTTP server, or none where the config gives a static token (auth_token): that
   * token is sent as it is, and a 401 is a refusal.
   */
  providerFor(server: OauthServerRef, stored?: McpOauthRecord): StoredOauthProvider | undefined {
    const { config, identityId } = server;
    if (config.mcp_server_type === 'stdio' || config.auth_token) return undefined;
    const fetchFn = oauthFetch(new URL(config.server_url), this.settings.fetchPolicy);
    const ref = { id: server.id, config, ...(identityId ? { identityId } : {}) };
    return new StoredOauthProvider(this.db, this.settings, ref, fetchFn, this.dpopKeys, stored);
  }

  /**
   * A provider for a server that uses OAuth: its config says how (`oauth`), or it has OAuth state
   * stored (an authorization that began on a 401). None for any other: a server that never asked for
   * OAuth is connected to without one, and nothing of OAuth is read while it is used.
   */
  async providerIfUsed(server: OauthServerRef): Promise<StoredOauthProvider | undefined> {
    const { config } = server;
    if (config.mcp_server_type === 'stdio' || config.auth_token) return undefined;
    if (config.oauth) return this.providerFor(server);
    const stored = await getMcpOauth(this.db, server.id, server.identityId);
    return stored && this.providerFor(server, stored);
  }

  /** Whose pending authorization has this state; the state is used up. */
  async takePending(state: string): Promise<PendingOwner> {
    const owner = await takePendingAuthorization(this.db, digest(state));
    if (!owner) throw new OauthStateError('This authorization is unknown, used or expired');
    return owner;
  }

  /**
   * Checks the callback's `iss` against the issuer of the authorization server the flow began with
   * (RFC 9207, as MCP's SEP-2468 asks): compared as the exact string, required when that server says
   * it sends one, and compared whenever present; a mismatch is an answer from a server other than ours.
   */
  async checkIssuer({ serverId, identityId }: PendingOwner, iss: string | undefined): Promise<void> {
    const stored = await getMcpOauth(this.db, serverId, identityId);
    const metadata = stored?.discovery?.authorizationServerMetadata;
    const advertised: Record<string, unknown> = { ...metadata };
    const required = advertised.authorization_response_iss_parameter_supported === true;
    if (iss === undefined && !required) return;
    if (iss === undefined) throw new OauthStateError('The authorization response has no issuer (iss)');
    if (iss !== metadata?.issuer)
      throw new OauthStateError(`The authorization response comes from another issuer (${iss})`);
  }

  /** Exchanges the callback's code for tokens, stored for every process. */
  async exchange(server: OauthServerRef, code: string): Promise<void> {
    const provider = this.providerFor(server);
    if (!provider) throw new OauthStateError('This MCP server does not use OAuth');
    const { server_url } = server.config as HttpConfig;
    provider.useCachedDiscovery = true;
    await auth(provider, { serverUrl: server_url, authorizationCode: code, fetchFn: provider.fetchFn });
  }

  /**
   * What the API shows of a server's (or an identity's) OAuth: whether it has tokens, and a pending
   * authorization's URL.
   */
  async status(
    serverId: string,
    identityId?: string,
  ): Promise<{ authorized: boolean; authorization_url: string | null } | undefined> {
    const stored = await getMcpOauth(this.db, serverId, identityId);
    if (!stored) return undefined;
    return { authorized: !!stored.tokens, authorization_url: stored.authorizationUrl ?? null };
  }
}
