import type { Database, Queryable } from './database';
import { json } from './sql';
import { deleteMcpOauth } from './mcp-oauth';
import { decryptSecret, encryptSecret } from '../secrets';
import { SECRET_FIELDS, type McpServerConfig } from '../schemas/mcp-server';

/**
 * A server's connection as last tried with its config: not yet (`pending`), its tools listed
 * (`connected`), or `failed`, with the error.
 */
export interface McpConnection {
  status: 'pending' | 'connected' | 'failed';
  last_error: string | null;
  last_tried_at: Date | null;
}

/** A registered server with its whole config, credentials decrypted: never sent out as it is. */
export interface McpServerRow {
  id: string;
  server_name: string;
  config: McpServerConfig;
  /** Counts the config's changes (connections are recorded for the config they were made with). */
  config_version: number;
  connection: McpConnection;
  created_at: Date;
  updated_at: Date;
}

/** A row as stored, credentials encrypted. */
export interface StoredMcpServer {
  id: string;
  server_name: string;
  mcp_server_type: string;
  config: Record<string, unknown>;
  secrets: string | null;
  config_version: number;
  connection_status: McpConnection['status'];
  last_error: string | null;
  last_tried_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The config split into the columns: plain fields, and the credentials as one encrypted object. */
function split(config: McpServerConfig): { plain: Record<string, unknown>; secrets: string | null } {
  const plain: Record<string, unknown> = { ...config };
  const secrets: Record<string, unknown> = {};
  for (const field of SECRET_FIELDS) {
    if (plain[field] !== undefined && plain[field] !== null) secrets[field] = plain[field];
    delete plain[field];
  }
  return { plain, secrets: Object.keys(secrets).length ? encryptSecret(JSON.stringify(secrets)) : null };
}

/** The stored row with its credentials decrypted; it may come as JSON (its times as text). */
export const mcpServerOf = (stored: StoredMcpServer): McpServerRow => ({
  id: stored.id,
  server_name: stored.server_name,
  config: {
    ...stored.config,
    ...(stored.secrets ? JSON.parse(decryptSecret(stored.secrets)) : {}),
  } as McpServerConfig,
  config_version: stored.config_version,
  connection: {
    status: stored.connection_status,
    last_error: stored.last_error,
    last_tried_at: stored.last_tried_at && new Date(stored.last_tried_at),
  },
  created_at: new Date(stored.created_at),
  updated_at: new Date(stored.updated_at),
});

export async function insertMcpServer(
  db: Queryable,
  server: { id: string; server_name: string; config: McpServerConfig },
): Promise<McpServerRow> {
  const { plain, secrets } = split(server.config);
  const [row] = await db.query<StoredMcpServer>(
    `INSERT INTO mcp_servers (id, server_name, mcp_server_type, config, secrets, connection_status)
     VALUES ($1, $2, $3, $4, $5, 'pending') RETURNING *`,
    [server.id, server.server_name, server.config.mcp_server_type, json(plain), secrets],
  );
  return mcpServerOf(row);
}

/** Stores a new name and config; its connection is to be tried again (`pending`). */
export async function updateMcpServer(
  db: Queryable,
  id: string,
  server: { server_name: string; config: McpServerConfig },
): Promise<McpServerRow> {
  const { plain, secrets } = split(server.config);
  const [row] = await db.query<StoredMcpServer>(
    `UPDATE mcp_servers SET server_name = $2, config = $3, secrets = $4, updated_at = now(),
       config_version = config_version + 1, connection_status = 'pending', last_error = NULL
     WHERE id = $1 RETURNING *`,
    [id, server.server_name, json(plain), secrets],
  );
  return mcpServerOf(row);
}

/** The server, locked until the transaction ends when `forUpdate` (tool syncs of one server take turns). */
export async function getMcpServer(
  db: Queryable,
  id: string,
  forUpdate = false,
): Promise<McpServerRow | undefined> {
  const [row] = await db.query<StoredMcpServer>(
    `SELECT * FROM mcp_servers WHERE id = $1${forUpdate ? ' FOR UPDATE' : ''}`,
    [id],
  );
  return row && mcpServerOf(row);
}

/**
 * Records how connecting to the server with its config at `config_version` went: `connected`, or
 * `failed` with `error`. Nothing is recorded once its config has changed since.
 */
export async function recordMcpConnection(
  db: Queryable,
  server: Pick<McpServerRow, 'id' | 'config_version'>,
  error: string | null,
): Promise<void> {
  await db.query(
    `UPDATE mcp_servers SET connection_status = $3, last_error = $4, last_tried_at = now()
     WHERE id = $1 AND config_version = $2`,
    [server.id, server.config_version, error === null ? 'connected' : 'failed', error],
  );
}

export async function getMcpServerByName(db: Queryable, name: string): Promise<McpServerRow | undefined> {
  const [row] = await db.query<StoredMcpServer>('SELECT * FROM mcp_servers WHERE server_name = $1', [name]);
  return row && mcpServerOf(row);
}

/** The `tool_timeout_seconds` of each server named that sets one (a plain field: nothing to decrypt). */
export async function mcpToolTimeouts(db: Queryable, ids: string[]): Promise<Map<string, number>> {
  if (!ids.length) return new Map();
  const rows = await db.query<{ id: string; seconds: number }>(
    `SELECT id, (config ->> 'tool_timeout_seconds')::float8 AS seconds FROM mcp_servers
     WHERE id = ANY($1) AND config ? 'tool_timeout_seconds'`,
    [ids],
  );
  return new Map(rows.map((row) => [row.id, row.seconds]));
}

/** Every server, oldest first (Letta's list takes no paging). */
export async function listMcpServers(db: Queryable): Promise<McpServerRow[]> {
  return (await db.query<StoredMcpServer>('SELECT * FROM mcp_servers ORDER BY created_at, id')).map(
    mcpServerOf,
  );
}

/**
 * Deletes the server, its OAuth state and its tools (and so their attachments to agents). The server's row is locked
 * first: a sync of its tools (a list-changed notice) that holds it finishes before, and its tools are
 * deleted here; one that comes after finds no server, and stores nothing.
 */
export function deleteMcpServer(db: Database, id: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    if (!(await getMcpServer(tx, id, true))) return false;
    await tx.query(`DELETE FROM tools WHERE metadata -> 'mcp' ->> 'server_id' = $1`, [id]);
    await tx.query('DELETE FROM mcp_servers WHERE id = $1', [id]);
    await deleteMcpOauth(tx, id);
    return true;
  });
}
