import pg from 'pg';
import type { Queryable } from './database';
import type { AgentRecord, AgentRow, BlockRow, SecretRow, ToolRow } from './rows';
import { newId } from '../ids';
import { decryptSecret, encryptSecret } from '../secrets';
import { json, keysetPage, pageOf, updateById, whereClause, type Page } from './sql';
import { agentDirectories } from './file-agents';

type FileLimits = 'max_files_open' | 'per_file_view_window_char_limit';
export type NewAgent = Omit<
  AgentRow,
  'created_at' | 'updated_at' | 'last_stop_reason' | 'pending_approval' | FileLimits
> &
  Partial<Pick<AgentRow, FileLimits>>;

export async function insertAgent(db: Queryable, agent: NewAgent): Promise<void> {
  await db.query(
    `INSERT INTO agents (id, name, agent_type, description, system, model, llm_config, embedding_config,
       tool_rules, tags, metadata, timezone, approval_timeout_seconds, max_files_open,
       per_file_view_window_char_limit)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
    [
      agent.id,
      agent.name,
      agent.agent_type,
      agent.description,
      agent.system,
      agent.model,
      json(agent.llm_config),
      json(agent.embedding_config),
      json(agent.tool_rules),
      agent.tags,
      json(agent.metadata),
      agent.timezone,
      agent.approval_timeout_seconds,
      agent.max_files_open ?? null,
      agent.per_file_view_window_char_limit ?? null,
    ],
  );
}

export async function attachBlocks(db: Queryable, agentId: string, blockIds: string[]): Promise<void> {
  for (const [position, blockId] of blockIds.entries()) {
    await db.query(
      `INSERT INTO agent_blocks (agent_id, block_id, position) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
      [agentId, blockId, position],
    );
  }
}

/** Detaches tools from the agent: those named, or all of them. */
export async function detachTools(db: Queryable, agentId: string, toolIds?: string[]): Promise<void> {
  await db.query(
    `DELETE FROM agent_tools WHERE agent_id = $1 ${toolIds ? 'AND tool_id = ANY($2)' : ''}`,
    toolIds ? [agentId, toolIds] : [agentId],
  );
}

export async function detachAllBlocks(db: Queryable, agentId: string): Promise<void> {
  await db.query('DELETE FROM agent_blocks WHERE agent_id = $1', [agentId]);
}

/** How the agent's last run stopped (`last_stop_reason`, as Letta shows it). */
export async function setLastStopReason(db: Queryable, agentId: string, stopReason: string): Promise<void> {
  await db.query('UPDATE agents SET last_stop_reason = $2 WHERE id = $1', [agentId, stopReason]);
}

export async function attachTools(db: Queryable, agentId: string, toolIds: string[]): Promise<void> {
  for (const toolId of toolIds) {
    await db.query('INSERT INTO agent_tools (agent_id, tool_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
      agentId,
      toolId,
    ]);
  }
}

/** Replaces an agent's secrets; their values are stored encrypted. */
export async function replaceSecrets(
  db: Queryable,
  agentId: string,
  secrets: Record<string, string>,
): Promise<void> {
  await db.query('DELETE FROM agent_secrets WHERE agent_id = $1', [agentId]);
  for (const [key, value] of Object.entries(secrets)) {
    await db.query('INSERT INTO agent_secrets (id, agent_id, key, value) VALUES ($1, $2, $3, $4)', [
      newId('agent-env'),
      agentId,
      key,
      encryptSecret(value),
    ]);
  }
}

export async function getAgentRow(db: Queryable, id: string): Promise<AgentRow | undefined> {
  const [row] = await db.query<AgentRow>('SELECT * FROM agents WHERE id = $1', [id]);
  return row;
}

/**
 * The statement that reads an agent's row and locks it until the transaction ends (its pending
 * approval and its memory change under this lock), for a transaction to open with
 * (`Database.transaction`): sent with the BEGIN, it saves a round trip. Without parameters, so the id
 * is quoted into it.
 */
export const agentLock = (id: string) => lockStatement(id, '*');

/**
 * The same lock, reading nothing of the row: for a transaction whose own statements read what it needs
 * (a tool call's: every column of the row parsed for nothing, at every memory edit).
 */
export const agentLockOnly = (id: string) => lockStatement(id, 'id');

/**
 * NO KEY UPDATE: it excludes every other holder of the lock, but not a statement inserting a row that
 * refers to the agent (its foreign key check takes KEY SHARE), such as a memory edit's record, which
 * holds its block locked meanwhile: with FOR UPDATE, a transaction holding this lock and waiting for
 * that block deadlocked with it.
 */
const lockStatement = (id: string, columns: string) =>
  `SELECT ${columns} FROM agents WHERE id = ${pg.escapeLiteral(id)} FOR NO KEY UPDATE`;

export async function agentBlocks(db: Queryable, agentId: string): Promise<BlockRow[]> {
  return db.query<BlockRow>(
    `SELECT b.* FROM blocks b JOIN agent_blocks ab ON ab.block_id = b.id
     WHERE ab.agent_id = $1 ORDER BY ab.position, b.created_at`,
    [agentId],
  );
}

/**
 * The agent's blocks locked until the transaction ends (a memory edit's), in the order of their ids:
 * two edits locking blocks their agents share then wait for one another instead of deadlocking.
 */
export async function lockAgentBlocks(db: Queryable, agentId: string): Promise<BlockRow[]> {
  return db.query<BlockRow>(
    `SELECT b.* FROM blocks b JOIN agent_blocks ab ON ab.block_id = b.id
     WHERE ab.agent_id = $1 ORDER BY b.id FOR UPDATE OF b`,
    [agentId],
  );
}

export async function agentTools(db: Queryable, agentId: string): Promise<ToolRow[]> {
  return db.query<ToolRow>(
    `SELECT t.* FROM tools t JOIN agent_tools at ON at.tool_id = t.id WHERE at.agent_id = $1 ORDER BY t.name`,
    [agentId],
  );
}

export async function agentTool(db: Queryable, agentId: string, name: string): Promise<ToolRow | undefined> {
  const [tool] = await db.query<ToolRow>(
    `SELECT t.* FROM tools t JOIN agent_tools at ON at.tool_id = t.id WHERE at.agent_id = $1 AND t.name = $2`,
    [agentId, name],
  );
  return tool;
}

/** An agent's secrets, decrypted. */
export async function agentSecrets(db: Queryable, agentId: string): Promise<SecretRow[]> {
  const rows = await db.query<SecretRow>('SELECT * FROM agent_secrets WHERE agent_id = $1 ORDER BY key', [
    agentId,
  ]);
  return rows.map((row) => ({ ...row, value: decryptSecret(row.value) }));
}

/** The agent with its blocks, tools, secrets and directories, all read at once (one round trip on a pool). */
export async function getAgent(db: Queryable, id: string): Promise<AgentRecord | undefined> {
  const [row, blocks, tools, secrets, directories] = await Promise.all([
    getAgentRow(db, id),
    agentBlocks(db, id),
    agentTools(db, id),
    agentSecrets(db, id),
    agentDirectories(db, id),
  ]);
  return row && { ...row, blocks, tools, secrets, directories };
}

/** Agents, newest first by default, optionally filtered by name or tags. */
export async function listAgentRows(
  db: Queryable,
  page: Page,
  filters: { name?: string; tags?: string[]; matchAllTags?: boolean; identityId?: string },
): Promise<AgentRow[]> {
  const where = whereClause();
  if (filters.name) where.add('name = ?', filters.name);
  if (filters.identityId)
    where.add('id IN (SELECT agent_id FROM identities_agents WHERE identity_id = ?)', filters.identityId);
  if (filters.tags?.length) where.add(filters.matchAllTags ? 'tags @> ?' : 'tags && ?', filters.tags);
  return pageOf<AgentRow>(db, 'agents', where, page);
}

export async function updateAgentRow(db: Queryable, id: string, fields: Partial<NewAgent>): Promise<void> {
  await updateById(db, 'agents', id, fields, ['llm_config', 'embedding_config', 'tool_rules', 'metadata']);
}

export async function deleteAgent(db: Queryable, id: string): Promise<boolean> {
  // Blocks belong to their agent here (no shared blocks yet): remove them with it.
  await db.query(`DELETE FROM blocks WHERE id IN (SELECT block_id FROM agent_blocks WHERE agent_id = $1)`, [
    id,
  ]);
  const rows = await db.query('DELETE FROM agents WHERE id = $1 RETURNING id', [id]);
  return rows.length > 0;
}

/** Agents with every tag of `all` and, when `some` names any, one of those (oldest first). */
/** Which of these agent ids exist. */
export async function existingAgents(db: Queryable, ids: string[]): Promise<Set<string>> {
  const rows = await db.query<{ id: string }>(`SELECT id FROM agents WHERE id = ANY($1::text[])`, [ids]);
  return new Set(rows.map((row) => row.id));
}

export async function agentsMatchingTags(
  db: Queryable,
  all: string[],
  some: string[],
  limit: number,
): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    `SELECT id FROM agents WHERE tags @> $1 AND (cardinality($2::text[]) = 0 OR tags && $2)
     ORDER BY created_at, id LIMIT $3`,
    [all, some, limit],
  );
  return rows.map((row) => row.id);
}

/**
 * The agents a sandboxed call of `agentId` may reach besides its own (src/access/tool-api-access.ts):
 * those it created (`created`), then those sharing one of its tags, oldest first, `limit` at most.
 */
export async function relatedAgents(
  db: Queryable,
  agentId: string,
  limit: number,
): Promise<{ id: string; created: boolean }[]> {
  return db.query<{ id: string; created: boolean }>(
    `SELECT id, created_by_agent_id IS NOT DISTINCT FROM $1 AS created FROM agents
      WHERE id <> $1
        AND (created_by_agent_id = $1 OR tags && (SELECT tags FROM agents WHERE id = $1))
      ORDER BY created DESC, created_at, id LIMIT $2`,
    [agentId, limit],
  );
}

/** Records the agent whose sandboxed call created `agentId`. */
export async function setCreator(db: Queryable, agentId: string, creatorId: string): Promise<void> {
  await db.query(`UPDATE agents SET created_by_agent_id = $2 WHERE id = $1`, [agentId, creatorId]);
}

/** The tags agents have, by name, a page of them (the tag itself is the cursor). */
export async function agentTags(
  db: Queryable,
  filters: { name?: string },
  page: { after?: string; before?: string; limit: number; order: 'asc' | 'desc' },
): Promise<string[]> {
  const where = whereClause();
  if (filters.name) where.add('strpos(lower(tag), lower(?)) > 0', filters.name);
  const rows = await keysetPage<{ tag: string }>(
    db,
    'SELECT tag FROM (SELECT DISTINCT unnest(tags) AS tag FROM agents) t',
    where,
    page,
    { key: 'tag', cursor: '?' },
  );
  return rows.map((row) => row.tag);
}
