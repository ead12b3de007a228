/**
 * Folders (Letta's sources), their files, the chunks of a file being ingested, and the passages its
 * chunks become (rows of the folder's own archive, migration 0015): every statement of
 * src/agent/folders.ts and activities/file-ingestion.ts.
 */
import type { PassageRow } from './archives';
import type { Queryable } from './database';
import { json, keysetPage, pageOf, updateById, whereClause, type Page } from './sql';

export interface FolderRow {
  id: string;
  name: string;
  description: string | null;
  instructions: string | null;
  embedding_config: Record<string, unknown>;
  embedding_chunk_size: number | null;
  metadata: Record<string, unknown> | null;
  archive_id: string;
  created_at: Date;
  updated_at: Date;
}

/** Letta's FileProcessingStatus. */
export type FileStatus = 'pending' | 'parsing' | 'embedding' | 'completed' | 'error';

export interface FileRow {
  id: string;
  folder_id: string;
  file_name: string;
  original_file_name: string;
  file_type: string | null;
  file_size: number | null;
  processing_status: FileStatus;
  error_message: string | null;
  total_chunks: number | null;
  chunks_embedded: number | null;
  content: string | null;
  workflow_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A file as listed: everything but its bytes, and its content only when asked for. */
const FILE_COLUMNS = `id, folder_id, file_name, original_file_name, file_type, file_size::float8 AS file_size,
  processing_status, error_message, total_chunks, chunks_embedded, workflow_id, created_at, updated_at`;
const fileColumns = (withContent: boolean) => (withContent ? `${FILE_COLUMNS}, content` : FILE_COLUMNS);

export type FolderFields = Pick<
  FolderRow,
  'name' | 'description' | 'instructions' | 'embedding_config' | 'embedding_chunk_size' | 'metadata'
>;

export async function insertFolder(
  db: Queryable,
  id: string,
  archiveId: string,
  fields: FolderFields,
): Promise<FolderRow> {
  const [row] = await db.query<FolderRow>(
    `INSERT INTO folders (id, name, description, instructions, embedding_config, embedding_chunk_size, metadata, archive_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
    [
      id,
      fields.name,
      fields.description,
      fields.instructions,
      json(fields.embedding_config),
      fields.embedding_chunk_size,
      json(fields.metadata),
      archiveId,
    ],
  );
  return row;
}

export async function getFolder(db: Queryable, id: string): Promise<FolderRow | undefined> {
  const [row] = await db.query<FolderRow>('SELECT * FROM folders WHERE id = $1', [id]);
  return row;
}

/** The folder, locked until the transaction ends (uploads to one folder take their names in turn). */
export async function lockFolder(db: Queryable, id: string): Promise<FolderRow | undefined> {
  const [row] = await db.query<FolderRow>('SELECT * FROM folders WHERE id = $1 FOR UPDATE', [id]);
  return row;
}

export function listFolders(db: Queryable, filters: { name?: string }, page: Page): Promise<FolderRow[]> {
  const where = whereClause();
  if (filters.name) where.add('name = ?', filters.name);
  return pageOf<FolderRow>(db, 'folders', where, page);
}

export async function updateFolder(db: Queryable, id: string, fields: Partial<FolderFields>): Promise<void> {
  await updateById(db, 'folders', id, fields, ['embedding_config', 'metadata']);
}

/** Deletes the folder, its files (their chunks and views go with them) and its archive of passages. */
export async function deleteFolder(db: Queryable, id: string): Promise<FolderRow | undefined> {
  const [row] = await db.query<FolderRow>('DELETE FROM folders WHERE id = $1 RETURNING *', [id]);
  if (row) await db.query('DELETE FROM archives WHERE id = $1', [row.archive_id]);
  return row;
}

/** The ids of the agents the folder is attached to, paged by when they were attached. */
export async function folderAgentIds(db: Queryable, folderId: string, page: Page): Promise<string[]> {
  const where = whereClause();
  where.add('folder_id = ?', folderId);
  const rows = await keysetPage<{ agent_id: string }>(
    db,
    'SELECT agent_id FROM agents_folders',
    where,
    page,
    {
      key: 'created_at, agent_id',
      // The cursor's attachment to the same folder: the rows read are all of that folder.
      cursor: `(SELECT c.created_at, c.agent_id FROM agents_folders c
      WHERE c.folder_id = agents_folders.folder_id AND c.agent_id = ?)`,
    },
  );
  return rows.map((row) => row.agent_id);
}

export interface NewFile {
  id: string;
  folder_id: string;
  file_name: string;
  original_file_name: string;
  file_type: string;
  file_size: number;
  data: Buffer;
  workflow_id: string;
}

export async function insertFile(db: Queryable, file: NewFile): Promise<FileRow> {
  const [row] = await db.query<FileRow>(
    `INSERT INTO files (id, folder_id, file_name, original_file_name, file_type, file_size, data, workflow_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${FILE_COLUMNS}`,
    [
      file.id,
      file.folder_id,
      file.file_name,
      file.original_file_name,
      file.file_type,
      file.file_size,
      file.data,
      file.workflow_id,
    ],
  );
  return row;
}

/** Uploads whose ingestion may never have started: the API stopped between storing and starting it. */
export function pendingFiles(db: Queryable): Promise<FileRow[]> {
  return db.query<FileRow>(
    `SELECT ${FILE_COLUMNS} FROM files WHERE processing_status = 'pending' ORDER BY created_at`,
  );
}

export async function getFile(db: Queryable, id: string, withContent = false): Promise<FileRow | undefined> {
  const [row] = await db.query<FileRow>(`SELECT ${fileColumns(withContent)} FROM files WHERE id = $1`, [id]);
  return row;
}

export function listFiles(
  db: Queryable,
  folderId: string,
  page: Page,
  withContent = false,
): Promise<FileRow[]> {
  const where = whereClause();
  where.add('folder_id = ?', folderId);
  return pageOf<FileRow>(db, 'files', where, page, fileColumns(withContent));
}

export async function countFiles(db: Queryable, folderId: string): Promise<number> {
  const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM files WHERE folder_id = $1', [
    folderId,
  ]);
  return row.n;
}

/** The files of a folder uploaded under this name (duplicates are found by the name they came with). */
export function filesByOriginalName(db: Queryable, folderId: string, name: string): Promise<FileRow[]> {
  return db.query<FileRow>(
    `SELECT ${FILE_COLUMNS} FROM files WHERE folder_id = $1 AND original_file_name = $2 ORDER BY created_at, id`,
    [folderId, name],
  );
}

export async function fileNameTaken(db: Queryable, folderId: string, fileName: string): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM files WHERE folder_id = $1 AND file_name = $2', [
    folderId,
    fileName,
  ]);
  return rows.length > 0;
}

/** Workflows still ingesting files of a folder (or one file). */
export async function ingestingWorkflows(
  db: Queryable,
  scope: { folderId: string } | { fileId: string },
): Promise<string[]> {
  const [column, value] = 'folderId' in scope ? ['folder_id', scope.folderId] : ['id', scope.fileId];
  const rows = await db.query<{ workflow_id: string }>(
    `SELECT workflow_id FROM files WHERE ${column} = $1 AND workflow_id IS NOT NULL
       AND processing_status NOT IN ('completed', 'error')`,
    [value],
  );
  return rows.map((row) => row.workflow_id);
}

export async function deleteFile(db: Queryable, folderId: string, id: string): Promise<FileRow | undefined> {
  const [row] = await db.query<FileRow>(
    `DELETE FROM files WHERE id = $1 AND folder_id = $2 RETURNING ${FILE_COLUMNS}`,
    [id, folderId],
  );
  return row;
}

// ---- ingestion ----

/** What ingestion reads of a file: its bytes until parsed, its folder's archive and embedding model. */
export interface IngestionFile {
  id: string;
  folder_id: string;
  file_name: string;
  file_type: string | null;
  processing_status: FileStatus;
  data: Buffer | null;
  content: string | null;
  archive_id: string;
  embedding_config: Record<string, unknown>;
}

export async function ingestionFile(
  db: Queryable,
  fileId: string,
  withData = false,
): Promise<IngestionFile | undefined> {
  const [row] = await db.query<IngestionFile>(
    `SELECT f.id, f.folder_id, f.file_name, f.file_type, f.processing_status,
            ${withData ? 'f.data, f.content' : 'NULL::bytea AS data, NULL::text AS content'},
            d.archive_id, d.embedding_config
     FROM files f JOIN folders d ON d.id = f.folder_id WHERE f.id = $1`,
    [fileId],
  );
  return row;
}

/** Moves a file to a status; false when the file is gone. */
export async function setFileStatus(
  db: Queryable,
  fileId: string,
  status: FileStatus,
  fields: { error_message?: string | null; total_chunks?: number; chunks_embedded?: number } = {},
): Promise<boolean> {
  const rows = await db.query(
    `UPDATE files SET processing_status = $2,
       error_message = CASE WHEN $3::boolean THEN $4 ELSE error_message END,
       total_chunks = coalesce($5, total_chunks), chunks_embedded = coalesce($6, chunks_embedded),
       updated_at = now()
     WHERE id = $1 RETURNING 1`,
    [
      fileId,
      status,
      fields.error_message !== undefined,
      fields.error_message ?? null,
      fields.total_chunks ?? null,
      fields.chunks_embedded ?? null,
    ],
  );
  return rows.length > 0;
}

/** Rows per statement when a parsed file's chunks are stored. */
const CHUNK_ROWS_PER_INSERT = 500;

/**
 * Stores a parsed file: its text (its bytes are no longer needed) and its chunks, once (a repeated
 * parse stores nothing twice), and moves it on to `embedding`.
 */
export async function storeParsedFile(
  db: Queryable,
  fileId: string,
  content: string,
  chunks: string[],
): Promise<void> {
  for (let start = 0; start < chunks.length; start += CHUNK_ROWS_PER_INSERT) {
    const slice = chunks.slice(start, start + CHUNK_ROWS_PER_INSERT);
    await db.query(
      `INSERT INTO file_chunks (file_id, chunk_index, text)
       SELECT $1, i, t FROM unnest($2::int[], $3::text[]) AS c(i, t)
       ON CONFLICT (file_id, chunk_index) DO NOTHING`,
      [fileId, slice.map((_, i) => start + i), slice],
    );
  }
  await db.query(
    `UPDATE files SET content = $2, data = NULL, processing_status = 'embedding', total_chunks = $3,
       chunks_embedded = (SELECT count(*) FROM archival_passages WHERE file_id = $1), updated_at = now()
     WHERE id = $1`,
    [fileId, content, chunks.length],
  );
}

/** The chunks in [start, end) that have no passage yet. */
export function chunksToEmbed(
  db: Queryable,
  fileId: string,
  start: number,
  end: number,
): Promise<{ chunk_index: number; text: string }[]> {
  return db.query<{ chunk_index: number; text: string }>(
    `SELECT c.chunk_index, c.text FROM file_chunks c
     WHERE c.file_id = $1 AND c.chunk_index >= $2 AND c.chunk_index < $3
       AND NOT EXISTS (SELECT 1 FROM archival_passages p WHERE p.file_id = c.file_id AND p.chunk_index = c.chunk_index)
     ORDER BY c.chunk_index`,
    [fileId, start, end],
  );
}

export interface NewChunkPassage {
  id: string;
  chunk_index: number;
  text: string;
  embedding: number[];
}

/**
 * Stores embedded chunks as passages of the folder's archive, each chunk once whatever retried
 * (ON CONFLICT on the file and the chunk's place), and returns how many of the file's chunks are
 * stored now.
 */
export async function storeChunkPassages(
  db: Queryable,
  file: Pick<IngestionFile, 'id' | 'folder_id' | 'file_name' | 'archive_id' | 'embedding_config'>,
  passages: NewChunkPassage[],
): Promise<number> {
  for (const p of passages) {
    await db.query(
      `INSERT INTO archival_passages (id, archive_id, text, embedding, embedding_config, metadata, file_id, chunk_index)
       VALUES ($1, $2, $3, $4::real[], $5, $6, $7, $8)
       ON CONFLICT (file_id, chunk_index) WHERE file_id IS NOT NULL DO NOTHING`,
      [
        p.id,
        file.archive_id,
        p.text,
        p.embedding,
        json(file.embedding_config),
        json({ file_name: file.file_name, source_id: file.folder_id }),
        file.id,
        p.chunk_index,
      ],
    );
  }
  const [row] = await db.query<{ n: number }>(
    `UPDATE files SET chunks_embedded = (SELECT count(*)::int FROM archival_passages WHERE file_id = $1),
       updated_at = now()
     WHERE id = $1 RETURNING chunks_embedded AS n`,
    [file.id],
  );
  return row?.n ?? 0;
}

/** Marks a file's ingestion done and drops its chunks (its passages hold them now). */
export async function completeFile(db: Queryable, fileId: string): Promise<boolean> {
  await db.query('DELETE FROM file_chunks WHERE file_id = $1', [fileId]);
  return setFileStatus(db, fileId, 'completed', { error_message: null });
}

// ---- passages of a folder ----

/** A passage of a folder's file, with the file's name. */
export interface FolderPassageRow extends PassageRow {
  file_id: string | null;
  chunk_index: number | null;
  file_name: string | null;
}

export function listFolderPassages(
  db: Queryable,
  folder: FolderRow,
  page: Page,
): Promise<FolderPassageRow[]> {
  const where = whereClause();
  where.add('p.archive_id = ?', folder.archive_id);
  return keysetPage<FolderPassageRow>(
    db,
    `SELECT p.id, p.archive_id, p.text, p.tags, p.embedding::real[] AS embedding, p.embedding_config, p.metadata,
            p.file_id, p.chunk_index, f.file_name, p.created_at, p.updated_at
     FROM archival_passages p LEFT JOIN files f ON f.id = p.file_id`,
    where,
    page,
    { key: 'p.created_at, p.id', cursor: '(SELECT created_at, id FROM archival_passages WHERE id = ?)' },
  );
}
