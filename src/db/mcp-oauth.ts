/**
 * The OAuth state of MCP servers (the mcp_oauth table): client registration, tokens and PKCE verifier
 * encrypted at rest, discovered metadata, and the pending authorization a callback completes. A row
 * per server and identity: the identity '' (an identity id left out) is the server's own.
 */
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { Queryable } from './database';
import { json } from './sql';
import { decryptSecret, encryptSecret } from '../secrets';
import { deleteMcpDpopKey } from './mcp-dpop-keys';

export interface McpOauthRecord {
  clientInformation?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  /** When the access token expires, if the authorization server said. */
  tokensExpireAt?: Date | null;
  discovery?: OAuthDiscoveryState;
  codeVerifier?: string;
  /** Where a user authorizes the pending authorization, while one is pending. */
  authorizationUrl?: string | null;
}

/** A pending authorization: its state's digest, when it expires, and the URL that carries the state. */
export interface PendingAuthorization {
  stateDigest: string;
  expiresAt: Date;
  authorizationUrl: string;
}

interface StoredMcpOauth {
  client_information: string | null;
  tokens: string | null;
  tokens_expire_at: Date | null;
  discovery: OAuthDiscoveryState | null;
  code_verifier: string | null;
  authorization_url: string | null;
}

const sealed = (value: unknown) =>
  value === undefined || value === null ? null : encryptSecret(JSON.stringify(value));
const opened = <T>(stored: string | null): T | undefined =>
  stored === null ? undefined : (JSON.parse(decryptSecret(stored)) as T);

export async function getMcpOauth(
  db: Queryable,
  serverId: string,
  identityId?: string,
): Promise<McpOauthRecord | undefined> {
  const [row] = await db.query<StoredMcpOauth>(
    `SELECT client_information, tokens, tokens_expire_at, discovery, code_verifier, authorization_url
     FROM mcp_oauth WHERE server_id = $1 AND identity_id = $2`,
    [serverId, identityId ?? ''],
  );
  if (!row) return undefined;
  return {
    clientInformation: opened(row.client_information),
    tokens: opened(row.tokens),
    tokensExpireAt: row.tokens_expire_at,
    discovery: row.discovery ?? undefined,
    codeVerifier: opened(row.code_verifier),
    authorizationUrl: opened(row.authorization_url),
  };
}

/** The columns a change sets; a field left undefined is left alone. */
function columnsOf(
  change: McpOauthRecord & { pending?: PendingAuthorization | null },
): Record<string, unknown> {
  const columns: Record<string, unknown> = {};
  if ('clientInformation' in change) columns.client_information = sealed(change.clientInformation);
  if ('tokens' in change) columns.tokens = sealed(change.tokens);
  if ('tokensExpireAt' in change) columns.tokens_expire_at = change.tokensExpireAt ?? null;
  if ('discovery' in change) columns.discovery = json(change.discovery);
  if ('codeVerifier' in change) columns.code_verifier = sealed(change.codeVerifier);
  if ('pending' in change) {
    columns.state_digest = change.pending?.stateDigest ?? null;
    columns.state_expires_at = change.pending?.expiresAt ?? null;
    columns.authorization_url = sealed(change.pending?.authorizationUrl);
  }
  return columns;
}

/**
 * Stores the fields given (present, even if undefined: cleared) for the server (and identity),
 * creating its row.
 */
export async function saveMcpOauth(
  db: Queryable,
  serverId: string,
  change: McpOauthRecord & { pending?: PendingAuthorization | null },
  identityId?: string,
): Promise<void> {
  const entries = Object.entries(columnsOf(change));
  if (entries.length === 0) return;
  const names = entries.map(([name]) => name);
  await db.query(
    `INSERT INTO mcp_oauth (server_id, identity_id, ${names.join(', ')})
     VALUES ($1, $2, ${names.map((_, i) => `$${i + 3}`).join(', ')})
     ON CONFLICT (server_id, identity_id) DO UPDATE SET
       ${names.map((name) => `${name} = EXCLUDED.${name}`).join(', ')}, updated_at = now()`,
    [serverId, identityId ?? '', ...entries.map(([, value]) => value)],
  );
}

/** Whose pending authorization a state belongs to: a server, and the identity it authorizes for. */
export interface PendingOwner {
  serverId: string;
  identityId?: string;
}

/**
 * Whose pending authorization has this state, which is used up by the call: a state that is unknown,
 * expired or already used finds none.
 */
export async function takePendingAuthorization(
  db: Queryable,
  stateDigest: string,
): Promise<PendingOwner | undefined> {
  const [row] = await db.query<{ server_id: string; identity_id: string; live: boolean }>(
    `WITH old AS (
       SELECT server_id, identity_id, state_expires_at FROM mcp_oauth WHERE state_digest = $1 FOR UPDATE
     )
     UPDATE mcp_oauth m SET state_digest = NULL, state_expires_at = NULL, authorization_url = NULL,
       updated_at = now()
     FROM old WHERE m.server_id = old.server_id AND m.identity_id = old.identity_id
     RETURNING m.server_id, m.identity_id, old.state_expires_at > now() AS live`,
    [stateDigest],
  );
  if (!row?.live) return undefined;
  return { serverId: row.server_id, ...(row.identity_id ? { identityId: row.identity_id } : {}) };
}

/** Deletes the server's OAuth state, its identities' and its DPoP key included. */
export async function deleteMcpOauth(db: Queryable, serverId: string): Promise<void> {
  await db.query('DELETE FROM mcp_oauth WHERE server_id = $1', [serverId]);
  await deleteMcpDpopKey(db, serverId);
}

/** Deletes an identity's tokens for every server. */
export async function deleteIdentityMcpOauth(db: Queryable, identityId: string): Promise<void> {
  await db.query('DELETE FROM mcp_oauth WHERE identity_id = $1', [identityId]);
}
