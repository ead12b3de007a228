/** Archives and their passages (archival memory), and which agents they are attached to. */
import type { Queryable } from './database';
import { json, pageOf, updateById, whereClause, type Page } from './sql';

export interface ArchiveRow {
  id: string;
  name: string;
  description: string | null;
  embedding_config: Record<string, unknown> | null;
  metadata: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
}

export interface PassageRow {
  id: string;
  archive_id: string;
  text: string;
  tags: string[];
  embedding: number[] | null;
  embedding_config: Record<string, unknown> | null;
  metadata: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewPassage {
  id: string;
  text: string;
  tags: string[];
  /** Null: kept without an embedding (an archive without an embedding model), found by its text. */
  embedding: number[] | null;
  embedding_config: Record<string, unknown> | null;
  metadata?: Record<string, unknown> | null;
  created_at?: string | null;
}

export type ArchiveFields = Pick<ArchiveRow, 'name' | 'description' | 'embedding_config' | 'metadata'>;

// Read back as real[] whatever the column is (pgvector casts its vectors), so both kinds look alike.
const PASSAGE_COLUMNS = `id, archive_id, text, tags, embedding::real[] AS embedding, embedding_config, metadata,
  created_at, updated_at`;

export async function insertArchive(db: Queryable, id: string, fields: ArchiveFields): Promise<ArchiveRow> {
  const [row] = await db.query<ArchiveRow>(
    `INSERT INTO archives (id, name, description, embedding_config, metadata)
     VALUES ($1, $2, $3, $4, $5) RETURNING *`,
    [id, fields.name, fields.description, json(fields.embedding_config), json(fields.metadata)],
  );
  return row;
}

export async function getArchive(db: Queryable, id: string): Promise<ArchiveRow | undefined> {
  const [row] = await db.query<ArchiveRow>('SELECT * FROM archives WHERE id = $1', [id]);
  return row;
}

export function listArchives(
  db: Queryable,
  filters: { name?: string; agentId?: string },
  page: Page,
): Promise<ArchiveRow[]> {
  const where = whereClause();
  // A folder's archive holds its files' passages: it is the folder's, not an archive of its own.
  where.add('id NOT IN (SELECT archive_id FROM folders)');
  if (filters.name) where.add('name = ?', filters.name);
  if (filters.agentId)
    where.add('id IN (SELECT archive_id FROM archives_agents WHERE agent_id = ?)', filters.agentId);
  return pageOf<ArchiveRow>(db, 'archives', where, page);
}

export async function updateArchive(
  db: Queryable,
  id: string,
  fields: Partial<ArchiveFields>,
): Promise<void> {
  await updateById(db, 'archives', id, fields, ['embedding_config', 'metadata']);
}

export async function deleteArchive(db: Queryable, id: string): Promise<boolean> {
  return (await db.query('DELETE FROM archives WHERE id = $1 RETURNING id', [id])).length > 0;
}

/** Attaches an archive to an agent (again: no change). */
export async function attachArchive(db: Queryable, agentId: string, archiveId: string, owner = false) {
  await db.query(
    `INSERT INTO archives_agents (agent_id, archive_id, is_owner) VALUES ($1, $2, $3)
     ON CONFLICT (agent_id, archive_id) DO NOTHING`,
    [agentId, archiveId, owner],
  );
}

export async function detachArchive(db: Queryable, agentId: string, archiveId: string): Promise<boolean> {
  const rows = await db.query(
    'DELETE FROM archives_agents WHERE agent_id = $1 AND archive_id = $2 RETURNING 1',
    [agentId, archiveId],
  );
  return rows.length > 0;
}

/** The archive an agent's own inserts go to, if it has one yet. */
export async function ownArchive(db: Queryable, agentId: string): Promise<ArchiveRow | undefined> {
  const [row] = await db.query<ArchiveRow>(
    `SELECT a.* FROM archives a JOIN archives_agents aa ON aa.archive_id = a.id
     WHERE aa.agent_id = $1 ORDER BY aa.is_owner DESC, aa.created_at LIMIT 1`,
    [agentId],
  );
  return row;
}

export async function insertPassages(
  db: Queryable,
  archiveId: string,
  passages: NewPassage[],
): Promise<PassageRow[]> {
  const rows: PassageRow[] = [];
  for (const p of passages) {
    const [row] = await db.query<PassageRow>(
      `INSERT INTO archival_passages (id, archive_id, text, tags, embedding, embedding_config, metadata, created_at)
       VALUES ($1, $2, $3, $4, $5::real[], $6, $7, coalesce($8::timestamptz, now()))
       RETURNING ${PASSAGE_COLUMNS}`,
      [
        p.id,
        archiveId,
        p.text,
        p.tags,
        p.embedding,
        json(p.embedding_config),
        json(p.metadata ?? null),
        p.created_at ?? null,
      ],
    );
    rows.push(row);
  }
  return rows;
}

/**
 * Where passages are looked for: an agent's attached archives, one archive, or every archive (but
 * folders', whose passages are their files').
 */
export type PassageScope = { agentId: string } | { archiveId: string } | { everyArchive: true };

function scoped(scope: PassageScope) {
  const where = whereClause();
  if ('agentId' in scope)
    where.add('archive_id IN (SELECT archive_id FROM archives_agents WHERE agent_id = ?)', scope.agentId);
  else if ('archiveId' in scope) where.add('archive_id = ?', scope.archiveId);
  else where.add('archive_id NOT IN (SELECT archive_id FROM folders)');
  return where;
}

/** What a search keeps of the passages in its scope. */
export interface PassageFilters {
  tags?: string[];
  tagMatchMode: 'any' | 'all';
  start?: Date;
  end?: Date;
}

function filtered(scope: PassageScope, filters: PassageFilters) {
  const where = scoped(scope);
  if (filters.tags?.length)
    where.add(filters.tagMatchMode === 'all' ? 'tags @> ?' : 'tags && ?', filters.tags);
  if (filters.start) where.add('created_at >= ?', filters.start);
  if (filters.end) where.add('created_at <= ?', filters.end);
  return where;
}

export function listPassages(db: Queryable, scope: PassageScope, page: Page & { search?: string }) {
  const where = scoped(scope);
  if (page.search) where.add('strpos(lower(text), lower(?)) > 0', page.search);
  return pageOf<PassageRow>(db, 'archival_passages', where, page, PASSAGE_COLUMNS);
}

export async function deletePassage(db: Queryable, scope: PassageScope, id: string): Promise<boolean> {
  const where = scoped(scope);
  where.add('id = ?', id);
  return (await db.query(`DELETE FROM archival_passages ${where} RETURNING id`, where.params)).length > 0;
}

/** An embedding model, as a passage's embedding_config names it. */
export interface EmbeddingModel {
  provider: string;
  model: string;
}

export interface PassageQuery extends PassageFilters {
  /** The query's embedding, unit length. */
  embedding: number[];
  /** Only passages embedded with this model. */
  model?: EmbeddingModel;
  limit: number;
}

const embeddingKinds = new WeakMap<Queryable, Promise<'vector' | 'real[]'>>();

/** Whether the embeddings are pgvector's (migration 0012 chose by what the server has). */
export function embeddingKind(db: Queryable): Promise<'vector' | 'real[]'> {
  let kind = embeddingKinds.get(db);
  if (!kind) {
    kind = db
      .query<{ type: string }>(
        `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
         WHERE attrelid = 'archival_passages'::regclass AND attname = 'embedding'`,
      )
      .then(([row]) => (row?.type === 'vector' ? 'vector' : 'real[]'));
    embeddingKinds.set(db, kind);
  }
  return kind;
}

/**
 * The passages nearest the query, best first, with their cosine similarity: pgvector's distance
 * where it is there, else the dot product of the unit vectors, exactly, row by row. Passages embedded
 * with another number of dimensions (another model) are left out.
 */
export async function searchPassages(
  db: Queryable,
  scope: PassageScope,
  query: PassageQuery,
): Promise<(PassageRow & { score: number })[]> {
  const where = filtered(scope, query);
  const vector = where.param(query.embedding);
  const kind = await embeddingKind(db);
  const dims = where.param(query.embedding.length);
  if (kind === 'vector') where.add(`vector_dims(embedding) = ${dims}`);
  else where.add(`array_length(embedding, 1) = ${dims}`);
  if (query.model) {
    where.add("embedding_config->>'embedding_endpoint_type' = ?", query.model.provider);
    where.add("embedding_config->>'embedding_model' = ?", query.model.model);
  }
  const score =
    kind === 'vector'
      ? `1 - (embedding <=> ${vector}::real[]::vector)`
      : `(SELECT sum(a * b) FROM unnest(embedding, ${vector}::real[]) AS t(a, b))`;
  return db.query<PassageRow & { score: number }>(
    `SELECT ${PASSAGE_COLUMNS}, ${score} AS score FROM archival_passages ${where}
     ORDER BY score DESC, created_at DESC LIMIT ${where.param(query.limit)}`,
    where.params,
  );
}

/**
 * The embedding configs the embedded passages in scope were made with, one per model: a query is
 * embedded with each to be compared with that model's passages.
 */
export async function passageEmbeddings(
  db: Queryable,
  scope: PassageScope,
): Promise<Record<string, unknown>[]> {
  const where = scoped(scope);
  where.add('embedding IS NOT NULL');
  const rows = await db.query<{ embedding_config: Record<string, unknown> }>(
    `SELECT DISTINCT ON (embedding_config->>'embedding_endpoint_type', embedding_config->>'embedding_model')
       embedding_config FROM archival_passages ${where}`,
    where.params,
  );
  return rows.map((row) => row.embedding_config);
}

/**
 * Passages in scope that pass the filters, oldest first: with `text`, those kept without an embedding
 * whose text holds it, any case (Letta's text search where there is no embedding to compare).
 */
export function passagesByText(
  db: Queryable,
  scope: PassageScope,
  filters: PassageFilters & { text?: string; limit: number },
): Promise<PassageRow[]> {
  const where = filtered(scope, filters);
  if (filters.text) {
    where.add('embedding IS NULL');
    where.add('strpos(lower(text), lower(?)) > 0', filters.text);
  }
  return db.query<PassageRow>(
    `SELECT ${PASSAGE_COLUMNS} FROM archival_passages ${where}
     ORDER BY created_at, id LIMIT ${where.param(filters.limit)}`,
    where.params,
  );
}
