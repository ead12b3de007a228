/**
 * The DPoP key of each OAuth-protected MCP server's client (the mcp_dpop_keys table): its private JWK,
 * encrypted at rest. Made once per server and never changed, so tokens bound to it stay usable.
 */
import type { JWK } from 'jose';
import type { Queryable } from './database';
import { decryptSecret, encryptSecret } from '../secrets';

const opened = (stored: string) => JSON.parse(decryptSecret(stored)) as JWK;

export async function getMcpDpopKey(db: Queryable, serverId: string): Promise<JWK | undefined> {
  const [row] = await db.query<{ private_jwk: string }>(
    'SELECT private_jwk FROM mcp_dpop_keys WHERE server_id = $1',
    [serverId],
  );
  return row && opened(row.private_jwk);
}

/** Stores the key as the server's unless it has one already (another process made it first); the one kept. */
export async function keepMcpDpopKey(db: Queryable, serverId: string, privateJwk: JWK): Promise<JWK> {
  const [row] = await db.query<{ private_jwk: string }>(
    `INSERT INTO mcp_dpop_keys (server_id, private_jwk) VALUES ($1, $2)
     ON CONFLICT (server_id) DO UPDATE SET private_jwk = mcp_dpop_keys.private_jwk
     RETURNING private_jwk`,
    [serverId, encryptSecret(JSON.stringify(privateJwk))],
  );
  return opened(row!.private_jwk);
}

export async function deleteMcpDpopKey(db: Queryable, serverId: string): Promise<void> {
  await db.query('DELETE FROM mcp_dpop_keys WHERE server_id = $1', [serverId]);
}
