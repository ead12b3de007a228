/**
 * Letta's client-side access tokens: a bearer secret that reaches only the agents its policy names,
 * with the access it grants on each (reading or writing the agent, reading or writing its messages),
 * until it expires or is revoked. A token reads `lct-<id>-<secret>`: the id is public (lists show it,
 * revocation takes it), the secret is shown once, when the token is made, and kept as its SHA-256 alone.
 * src/api/scoped-access.ts decides what a request carrying one may reach.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { invalid, notFound } from '../errors';
import type { Queryable } from '../db';
import {
  addToPolicy,
  deleteAccessToken,
  findAccessToken,
  insertAccessToken,
  listAccessTokens,
  type AccessTokenRow,
  type AgentAccess,
  type AgentGrant,
  type TokenCaller,
} from '../db/access-tokens';
import { existingAgents, setCreator } from '../db/agents';

export type { AgentAccess, AgentGrant, TokenCaller };

/** Every access a policy entry can grant. */
export const ALL_ACCESS: AgentAccess[] = ['read_agent', 'write_agent', 'read_messages', 'write_messages'];

const TOKEN = /^(lct-[0-9a-f]{16})-([A-Za-z0-9_-]{43})$/;
const TOKEN_ID = /^lct-[0-9a-f]{16}$/;

/** Whether a bearer credential is meant as an access token (not, say, a password). */
export const isAccessToken = (presented: string) => presented.startsWith('lct-');

const sha256 = (text: string) => createHash('sha256').update(text).digest();

/** What a verified token grants. */
export interface AccessGrant {
  /** The token's public id. */
  id: string;
  /** The sandboxed call the token was made for; none for the tokens the API makes. */
  caller?: { agentId: string; runId: string | null };
  /** The app the token was made for (`https://app.example.com`): a browser request must come from it. */
  hostname: string;
  /** Whether the token grants `access` on the agent. */
  allows(agentId: string, access: AgentAccess): boolean;
  /** The agents on which the token grants `access`. */
  agents(access: AgentAccess): string[];
}

export interface TokenLimits {
  defaultTtlMs: number;
  maxTtlMs: number;
}

export interface NewTokenRequest {
  hostname: string;
  policy: AgentGrant[];
  expiresAt?: Date;
  caller?: TokenCaller;
}

/** A token as Letta's API shows it; `token` is the whole token only in the answer that makes it. */
export interface AccessTokenView {
  token: string;
  expiresAt: Date;
  hostname: string;
  policy: AgentGrant[];
}

const viewOf = (row: AccessTokenRow, token = row.id): AccessTokenView => ({
  token,
  expiresAt: row.expires_at,
  hostname: row.hostname,
  policy: row.policy,
});

/** Makes a token for agents that exist, expiring within the limits. */
export async function createAccessToken(
  db: Queryable,
  request: NewTokenRequest,
  limits: TokenLimits,
): Promise<AccessTokenView> {
  const now = Date.now();
  const expiresAt = request.expiresAt ?? new Date(now + limits.defaultTtlMs);
  if (expiresAt.getTime() <= now) throw invalid('expires_at must be in the future');
  if (expiresAt.getTime() > now + limits.maxTtlMs)
    throw invalid(`expires_at may be at most ${limits.maxTtlMs} ms ahead (ACCESS_TOKEN_MAX_TTL_MS)`);
  const ids = [...new Set(request.policy.map((grant) => grant.id))];
  const existing = await existingAgents(db, ids);
  const absent = ids.filter((id) => !existing.has(id));
  if (absent.length) throw notFound(`Agent ${absent.join(', ')}`);
  return mintAccessToken(db, { ...request, expiresAt });
}

/**
 * Stores a token as asked, unchecked: for a policy read from the database in the same breath (a
 * sandboxed call's, src/access/tool-api-access.ts). Returns the whole token, the only time it is seen.
 */
export async function mintAccessToken(
  db: Queryable,
  request: NewTokenRequest & { expiresAt: Date },
): Promise<AccessTokenView> {
  const id = `lct-${randomBytes(8).toString('hex')}`;
  const secret = randomBytes(32).toString('base64url');
  const row = {
    id,
    secret_sha256: sha256(secret),
    hostname: request.hostname,
    policy: request.policy,
    expires_at: request.expiresAt,
    caller: request.caller ?? null,
  };
  await insertAccessToken(db, row);
  return viewOf({ ...row, created_at: new Date() }, `${id}-${secret}`);
}

/** The grant of a presented token, unless it is malformed, unknown, expired or revoked. */
export async function verifyAccessToken(db: Queryable, presented: string): Promise<AccessGrant | undefined> {
  const [, id, secret] = TOKEN.exec(presented) ?? [];
  if (!id) return undefined;
  const row = await findAccessToken(db, id);
  if (!row || !timingSafeEqual(row.secret_sha256, sha256(secret))) return undefined;
  const grants = new Map(row.policy.map((grant) => [grant.id, new Set(grant.access)]));
  return {
    id: row.id,
    ...(row.caller && { caller: { agentId: row.caller.agent_id, runId: row.caller.run_id } }),
    hostname: row.hostname,
    allows: (agentId, access) => grants.get(agentId)?.has(access) === true,
    agents: (access) => [...grants].filter(([, granted]) => granted.has(access)).map(([id]) => id),
  };
}

/** Unexpired tokens without their secrets, and whether more follow. */
export async function listTokens(
  db: Queryable,
  query: { agentId?: string; limit: number; offset: number },
): Promise<{ tokens: AccessTokenView[]; hasNextPage: boolean }> {
  const rows = await listAccessTokens(db, { ...query, limit: query.limit + 1 });
  return {
    tokens: rows.slice(0, query.limit).map((row) => viewOf(row)),
    hasNextPage: rows.length > query.limit,
  };
}

/**
 * An agent a sandboxed call created with its token: the calling agent's from now on (its later calls'
 * tokens reach it too), and reached in full by this token for the rest of the call.
 */
export async function adoptCreatedAgent(db: Queryable, grant: AccessGrant, agentId: string): Promise<void> {
  if (!grant.caller) return;
  await setCreator(db, agentId, grant.caller.agentId);
  await addToPolicy(db, grant.id, { type: 'agent', id: agentId, access: ALL_ACCESS });
}

/** Revokes a token named by its id or given whole. */
export async function revokeToken(db: Queryable, token: string): Promise<void> {
  const id = TOKEN.exec(token)?.[1] ?? token;
  if (!TOKEN_ID.test(id) || !(await deleteAccessToken(db, id))) throw notFound(`Access token ${id}`);
}
