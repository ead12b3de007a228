/**
 * Scoped access tokens as stored: the public id, the secret's SHA-256, the policy. A token past its
 * expiry is never returned, and is deleted by the statement that stores the next token.
 */
import type { Queryable } from './database';
import { json } from './sql';

/** What a token grants on one agent (Letta's `policy` entries). */
export interface AgentGrant {
  type: 'agent';
  id: string;
  access: AgentAccess[];
}

export type AgentAccess = 'read_messages' | 'write_messages' | 'read_agent' | 'write_agent';

/** The sandboxed call a token was made for: its agent, and the run it is part of when it has one. */
export interface TokenCaller {
  agent_id: string;
  run_id: string | null;
}

export interface AccessTokenRow {
  id: string;
  secret_sha256: Buffer;
  hostname: string;
  policy: AgentGrant[];
  expires_at: Date;
  created_at: Date;
  /** Set for a sandboxed call's token only. */
  caller: TokenCaller | null;
}

export type NewAccessToken = Omit<AccessTokenRow, 'created_at'>;

export async function insertAccessToken(db: Queryable, token: NewAccessToken): Promise<void> {
  await db.query(
    `WITH expired AS (DELETE FROM access_tokens WHERE expires_at <= now())
     INSERT INTO access_tokens (id, secret_sha256, hostname, policy, expires_at, caller)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [
      token.id,
      token.secret_sha256,
      token.hostname,
      json(token.policy),
      token.expires_at,
      token.caller ? json(token.caller) : null,
    ],
  );
}

/** The token of this id, unless it has expired. */
export async function findAccessToken(db: Queryable, id: string): Promise<AccessTokenRow | undefined> {
  const [row] = await db.query<AccessTokenRow>(
    `SELECT * FROM access_tokens WHERE id = $1 AND expires_at > now()`,
    [id],
  );
  return row;
}

/** Unexpired tokens, newest first; with `agentId`, only those whose policy names it. */
export async function listAccessTokens(
  db: Queryable,
  { agentId, limit, offset }: { agentId?: string; limit: number; offset: number },
): Promise<AccessTokenRow[]> {
  return db.query<AccessTokenRow>(
    `SELECT * FROM access_tokens
      WHERE expires_at > now()
        AND ($1::text IS NULL OR policy @> jsonb_build_array(jsonb_build_object('id', $1::text)))
      ORDER BY created_at DESC, id
      LIMIT $2 OFFSET $3`,
    [agentId ?? null, limit, offset],
  );
}

/** Adds an agent to a token's policy (a sandboxed call's token, for the agent the call created). */
export async function addToPolicy(db: Queryable, id: string, grant: AgentGrant): Promise<void> {
  await db.query(`UPDATE access_tokens SET policy = policy || $2 WHERE id = $1`, [id, json([grant])]);
}

/** Revokes a token: true when there was one. */
export async function deleteAccessToken(db: Queryable, id: string): Promise<boolean> {
  const deleted = await db.query(`DELETE FROM access_tokens WHERE id = $1 RETURNING id`, [id]);
  return deleted.length > 0;
}
