/**
 * Which folders an agent has (`agents_folders`) and what it sees of their files (`files_agents`,
 * migration 0015): Letta's FileAgentManager, its LRU closing included (src/memory/file-views.ts decides
 * what to open; this module is its SQL).
 */
import type { Queryable } from './database';
import type { AgentDirectories, AgentFolderRow, FileAgentRow } from './rows';
import { pageOf, whereClause, type Page } from './sql';

/** A file of a folder with its parsed text (null until its ingestion has completed). */
export interface FolderFileRow {
  id: string;
  folder_id: string;
  file_name: string;
  file_type: string | null;
  content: string | null;
  processing_status: string;
}

const FILE_COLUMNS = 'id, folder_id, file_name, file_type, content, processing_status';

export async function agentFolders(db: Queryable, agentId: string): Promise<AgentFolderRow[]> {
  return db.query<AgentFolderRow>(
    `SELECT f.id, f.name, f.description, f.instructions, f.embedding_config, f.metadata, f.archive_id,
       f.created_at, f.updated_at
     FROM folders f JOIN agents_folders af ON af.folder_id = f.id
     WHERE af.agent_id = $1 ORDER BY af.created_at, f.id`,
    [agentId],
  );
}

export async function agentFileViews(db: Queryable, agentId: string): Promise<FileAgentRow[]> {
  return db.query<FileAgentRow>(
    'SELECT * FROM files_agents WHERE agent_id = $1 ORDER BY created_at, file_name',
    [agentId],
  );
}

/** The agent's folders and file views, read one after the other (a transaction takes one at a time). */
export async function agentDirectories(db: Queryable, agentId: string): Promise<AgentDirectories> {
  const folders = await agentFolders(db, agentId);
  return { folders, files: folders.length ? await agentFileViews(db, agentId) : [] };
}

export async function getFolder(db: Queryable, folderId: string): Promise<AgentFolderRow | undefined> {
  const [row] = await db.query<AgentFolderRow>(
    `SELECT id, name, description, instructions, embedding_config, metadata, archive_id, created_at,
       updated_at FROM folders WHERE id = $1`,
    [folderId],
  );
  return row;
}

/** Attaches a folder; false when it already was. */
export async function attachFolder(db: Queryable, agentId: string, folderId: string): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO agents_folders (agent_id, folder_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING agent_id`,
    [agentId, folderId],
  );
  return rows.length > 0;
}

/** Detaches a folder and forgets what the agent saw of its files. */
export async function detachFolder(db: Queryable, agentId: string, folderId: string): Promise<void> {
  await db.query('DELETE FROM agents_folders WHERE agent_id = $1 AND folder_id = $2', [agentId, folderId]);
  await db.query('DELETE FROM files_agents WHERE agent_id = $1 AND folder_id = $2', [agentId, folderId]);
}

export async function folderFiles(db: Queryable, folderId: string): Promise<FolderFileRow[]> {
  return db.query<FolderFileRow>(
    `SELECT ${FILE_COLUMNS} FROM files WHERE folder_id = $1 ORDER BY created_at, id`,
    [folderId],
  );
}

export async function getFolderFile(db: Queryable, fileId: string): Promise<FolderFileRow | undefined> {
  const [row] = await db.query<FolderFileRow>(`SELECT ${FILE_COLUMNS} FROM files WHERE id = $1`, [fileId]);
  return row;
}

/** The agents a folder is attached to, with their file controls. */
export async function folderAgents(db: Queryable, folderId: string) {
  return db.query<{
    id: string;
    max_files_open: number | null;
    per_file_view_window_char_limit: number | null;
    context_window: number | null;
  }>(
    `SELECT a.id, a.max_files_open, a.per_file_view_window_char_limit,
       (a.llm_config->>'context_window')::integer AS context_window
     FROM agents a JOIN agents_folders af ON af.agent_id = a.id WHERE af.folder_id = $1 ORDER BY a.id`,
    [folderId],
  );
}

export async function fileViewByName(
  db: Queryable,
  agentId: string,
  fileName: string,
): Promise<FileAgentRow | undefined> {
  const [row] = await db.query<FileAgentRow>(
    'SELECT * FROM files_agents WHERE agent_id = $1 AND file_name = $2 ORDER BY created_at LIMIT 1',
    [agentId, fileName],
  );
  return row;
}

export async function fileViewById(
  db: Queryable,
  agentId: string,
  fileId: string,
): Promise<FileAgentRow | undefined> {
  const [row] = await db.query<FileAgentRow>(
    'SELECT * FROM files_agents WHERE agent_id = $1 AND file_id = $2',
    [agentId, fileId],
  );
  return row;
}

/** The agent's open files, least recently used first. */
export async function openFileViews(db: Queryable, agentId: string): Promise<FileAgentRow[]> {
  return db.query<FileAgentRow>(
    `SELECT * FROM files_agents WHERE agent_id = $1 AND is_open ORDER BY last_accessed_at, created_at, id`,
    [agentId],
  );
}

export async function closeFileViews(db: Queryable, agentId: string, fileIds: string[]): Promise<void> {
  if (!fileIds.length) return;
  await db.query(
    `UPDATE files_agents SET is_open = false, visible_content = NULL, updated_at = now()
     WHERE agent_id = $1 AND file_id = ANY($2)`,
    [agentId, fileIds],
  );
}

/** Closes every open file of the agent but those named; returns the names it closed. */
export async function closeAllOtherFiles(db: Queryable, agentId: string, keep: string[]): Promise<string[]> {
  const rows = await db.query<{ file_name: string }>(
    `UPDATE files_agents SET is_open = false, visible_content = NULL, updated_at = now()
     WHERE agent_id = $1 AND is_open AND NOT (file_name = ANY($2)) RETURNING file_name`,
    [agentId, keep],
  );
  return rows.map((row) => row.file_name);
}

export interface FileViewWrite {
  agentId: string;
  fileId: string;
  folderId: string;
  fileName: string;
  isOpen: boolean;
  visibleContent: string | null;
  startLine: number | null;
  endLine: number | null;
  /** When it was used: rows written together keep their order this way. */
  accessedAt?: Date;
}

/** Opens (or closes) a file for the agent, making its row when there is none. */
export async function writeFileView(db: Queryable, view: FileViewWrite): Promise<void> {
  await db.query(
    `INSERT INTO files_agents (id, agent_id, file_id, folder_id, file_name, is_open, visible_content,
       start_line, end_line, last_accessed_at)
     VALUES ('file_agent-' || gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7, $8, coalesce($9, clock_timestamp()))
     ON CONFLICT (agent_id, file_id) DO UPDATE SET is_open = $5, visible_content = $6, start_line = $7,
       end_line = $8, last_accessed_at = coalesce($9, clock_timestamp()), updated_at = now()`,
    [
      view.agentId,
      view.fileId,
      view.folderId,
      view.fileName,
      view.isOpen,
      view.visibleContent,
      view.startLine,
      view.endLine,
      view.accessedAt ?? null,
    ],
  );
}

/** Letta's mark_access_bulk: the files were just used (LRU order). */
export async function markAccess(db: Queryable, agentId: string, fileNames: string[]): Promise<void> {
  if (!fileNames.length) return;
  await db.query(
    `UPDATE files_agents SET last_accessed_at = clock_timestamp() WHERE agent_id = $1 AND file_name = ANY($2)`,
    [agentId, fileNames],
  );
}

export async function setFileViewClosed(db: Queryable, agentId: string, fileId: string): Promise<boolean> {
  const rows = await db.query(
    `UPDATE files_agents SET is_open = false, last_accessed_at = clock_timestamp(), updated_at = now()
     WHERE agent_id = $1 AND file_id = $2 RETURNING id`,
    [agentId, fileId],
  );
  return rows.length > 0;
}

/** A page of the agent's file views (Letta's list_files_for_agent_paginated). */
export function listFileViews(db: Queryable, agentId: string, page: Page & { isOpen?: boolean }) {
  const where = whereClause();
  where.add('agent_id = ?', agentId);
  if (page.isOpen !== undefined) where.add('is_open = ?', page.isOpen);
  return pageOf<FileAgentRow>(db, 'files_agents', where, page);
}

/** A page of the agent's folders. */
export function listAgentFolders(db: Queryable, agentId: string, page: Page) {
  const where = whereClause();
  where.add('id IN (SELECT folder_id FROM agents_folders WHERE agent_id = ?)', agentId);
  return pageOf<AgentFolderRow>(
    db,
    'folders',
    where,
    page,
    'id, name, description, instructions, embedding_config, metadata, archive_id, created_at, updated_at',
  );
}

/** The files of an agent's folders with their text, for grep_files (in the order of its views). */
export async function agentFileContents(
  db: Queryable,
  agentId: string,
): Promise<(FolderFileRow & { view_name: string })[]> {
  return db.query(
    `SELECT f.id, f.folder_id, f.file_name, f.file_type, f.content, f.processing_status, fa.file_name AS view_name
     FROM files_agents fa JOIN files f ON f.id = fa.file_id
     WHERE fa.agent_id = $1 ORDER BY fa.created_at, fa.file_name`,
    [agentId],
  );
}

/** Which files passages are chunks of, and their names. */
export async function passageFiles(
  db: Queryable,
  passageIds: string[],
): Promise<{ id: string; file_id: string | null; file_name: string | null }[]> {
  if (!passageIds.length) return [];
  return db.query(
    `SELECT p.id, p.file_id, f.file_name FROM archival_passages p LEFT JOIN files f ON f.id = p.file_id
     WHERE p.id = ANY($1)`,
    [passageIds],
  );
}
