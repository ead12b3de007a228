/** Memory blocks, and which agents they are attached to (a block attached to several is one block). */
import type { Queryable } from './database';
import type { AgentRow, BlockRow } from './rows';
import { json, pageOf, updateById, whereClause, type Page } from './sql';
import { newId } from '../ids';

export type NewBlock = Omit<BlockRow, 'id' | 'created_at' | 'updated_at'>;

export async function insertBlock(db: Queryable, block: NewBlock): Promise<string> {
  const id = newId('block');
  await db.query(
    `INSERT INTO blocks (id, label, value, char_limit, description, read_only, hidden, metadata, tags)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      id,
      block.label,
      block.value,
      block.char_limit,
      block.description,
      block.read_only,
      block.hidden,
      json(block.metadata),
      block.tags,
    ],
  );
  return id;
}

export async function updateBlock(db: Queryable, blockId: string, fields: Partial<NewBlock>): Promise<void> {
  await updateById(db, 'blocks', blockId, fields, ['metadata']);
}

export async function getBlock(db: Queryable, id: string): Promise<BlockRow | undefined> {
  const [row] = await db.query<BlockRow>('SELECT * FROM blocks WHERE id = $1', [id]);
  return row;
}

/** The labels of the blocks of these ids that exist. */
export function blockLabels(db: Queryable, ids: string[]): Promise<{ id: string; label: string }[]> {
  return db.query<{ id: string; label: string }>('SELECT id, label FROM blocks WHERE id = ANY($1)', [ids]);
}

export interface BlockFilters {
  label?: string;
  labelSearch?: string;
  descriptionSearch?: string;
  tags?: string[];
  matchAllTags?: boolean;
}

export function listBlocks(db: Queryable, filters: BlockFilters, page: Page): Promise<BlockRow[]> {
  const where = whereClause();
  if (filters.label) where.add('label = ?', filters.label);
  if (filters.labelSearch) where.add('strpos(lower(label), lower(?)) > 0', filters.labelSearch);
  if (filters.descriptionSearch)
    where.add("strpos(lower(coalesce(description, '')), lower(?)) > 0", filters.descriptionSearch);
  if (filters.tags?.length) where.add(filters.matchAllTags ? 'tags @> ?' : 'tags && ?', filters.tags);
  return pageOf<BlockRow>(db, 'blocks', where, page);
}

export async function deleteBlock(db: Queryable, id: string): Promise<boolean> {
  return (await db.query('DELETE FROM blocks WHERE id = $1 RETURNING id', [id])).length > 0;
}

export async function detachBlock(db: Queryable, agentId: string, blockId: string): Promise<void> {
  await db.query('DELETE FROM agent_blocks WHERE agent_id = $1 AND block_id = $2', [agentId, blockId]);
}

/** The agents a block is attached to, a page of them. */
export function agentsOfBlock(db: Queryable, blockId: string, page: Page): Promise<AgentRow[]> {
  const where = whereClause();
  where.add('id IN (SELECT agent_id FROM agent_blocks WHERE block_id = ?)', blockId);
  return pageOf<AgentRow>(db, 'agents', where, page);
}

/** The labels of the blocks that share an agent with `blockId` (other than it), by agent. */
export function labelsBesideBlock(
  db: Queryable,
  blockId: string,
): Promise<{ agent_id: string; label: string }[]> {
  return db.query<{ agent_id: string; label: string }>(
    `SELECT ab.agent_id, b.label FROM agent_blocks ab JOIN blocks b ON b.id = ab.block_id
     WHERE ab.agent_id IN (SELECT agent_id FROM agent_blocks WHERE block_id = $1) AND b.id <> $1`,
    [blockId],
  );
}
