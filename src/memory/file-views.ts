/**
 * What the agents of a folder see of its files (`files_agents`, migration 0015), as Letta keeps it:
 * attaching a folder gives the agent the file tools and a view of every file (the first
 * `max_files_open` opened); a file that completes ingestion is opened in every attached agent's
 * context; at most `max_files_open` files are open at once, the least recently used closed first;
 * and the open files are rendered into the system prompt (`<directories>`), each cut at
 * `per_file_view_window_char_limit` characters.
 */
import type { Queryable } from '../db';
import * as views from '../db/file-agents';
import type { FolderFileRow } from '../db/file-agents';
import { agentTools, attachTools, detachTools } from '../db/agents';
import { toolsWhere } from '../db/tools';
import type { AgentDirectories, AgentRow, FileAgentRow } from '../db/rows';

/** Letta's FILES_TOOLS, attached with a folder and detached with the last one. */
export const FILE_TOOLS = ['open_files', 'grep_files', 'semantic_search_files'] as const;
export const FILE_TOOL_TYPE = 'letta_files_core';

/** Letta's DEFAULT_MAX_FILES_OPEN and DEFAULT_CORE_MEMORY_SOURCE_CHAR_LIMIT. */
const DEFAULT_MAX_FILES_OPEN = 5;
const DEFAULT_CHAR_LIMIT = 50_000;

export const FILE_IS_TRUNCATED_WARNING =
  '# NOTE: This block is truncated, use functions to view the full content.';

export interface FileLimits {
  maxFilesOpen: number;
  charLimit: number;
}

/** Letta's calculate_file_defaults_based_on_context_window. */
export function fileDefaultsForContextWindow(contextWindow: number | null | undefined): FileLimits {
  const limits = (maxFilesOpen: number, charLimit: number) => ({ maxFilesOpen, charLimit });
  if (!contextWindow) return limits(DEFAULT_MAX_FILES_OPEN, DEFAULT_CHAR_LIMIT);
  if (contextWindow <= 8_000) return limits(3, 5_000);
  if (contextWindow <= 32_000) return limits(5, 15_000);
  if (contextWindow <= 128_000) return limits(10, 25_000);
  if (contextWindow <= 200_000) return limits(10, 40_000);
  return limits(15, 40_000);
}

/** The agent's file controls: its own, else Letta's defaults for its context window. */
export function fileLimits(agent: {
  max_files_open: number | null;
  per_file_view_window_char_limit: number | null;
  llm_config?: { context_window?: number | null } | null;
  context_window?: number | null;
}): FileLimits {
  const defaults = fileDefaultsForContextWindow(agent.llm_config?.context_window ?? agent.context_window);
  return {
    maxFilesOpen: agent.max_files_open ?? defaults.maxFilesOpen,
    charLimit: agent.per_file_view_window_char_limit ?? defaults.charLimit,
  };
}

// ---------------------------------------------------------------------------------------------------
// Letta's LineChunker: a file's text as numbered lines (or sentences, for documentation).

type Strategy = 'line' | 'code' | 'documentation';

const EXTENSIONS: Record<string, Strategy> = {
  '.md': 'documentation',
  '.markdown': 'documentation',
  ...Object.fromEntries(
    [
      '.py',
      '.js',
      '.ts',
      '.java',
      '.cpp',
      '.cxx',
      '.c',
      '.h',
      '.cs',
      '.php',
      '.rb',
      '.go',
      '.rs',
      '.swift',
      '.kt',
      '.scala',
      '.r',
      '.m',
      '.html',
      '.htm',
      '.vue',
      '.jsx',
      '.tsx',
      '.sh',
      '.bash',
      '.ps1',
      '.bat',
      '.cmd',
      '.dockerfile',
      '.sql',
    ].map((ext) => [ext, 'code' as Strategy]),
  ),
};

/** Letta's file type registry by MIME type (the first type registered with it decides). */
const MIME_TYPES: Record<string, Strategy> = {
  'text/markdown': 'documentation',
  ...Object.fromEntries(
    [
      'text/x-python',
      'text/javascript',
      'text/x-typescript',
      'text/x-java-source',
      'text/x-c++',
      'text/x-c',
      'text/x-csharp',
      'text/x-php',
      'text/x-ruby',
      'text/x-go',
      'text/x-rust',
      'text/x-swift',
      'text/x-kotlin',
      'text/x-scala',
      'text/x-r',
      'text/x-objective-c',
      'text/html',
      'text/x-vue',
      'text/x-jsx',
      'text/x-tsx',
      'text/x-shellscript',
      'text/x-powershell',
      'text/x-batch',
      'text/x-dockerfile',
      'text/x-sql',
    ].map((mime) => [mime, 'code' as Strategy]),
  ),
};

function chunkingStrategy(file: { file_type: string | null; file_name: string }): Strategy {
  if (file.file_type) return MIME_TYPES[file.file_type] ?? 'line';
  const base = file.file_name.slice(file.file_name.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? (EXTENSIONS[base.slice(dot)] ?? 'line') : 'line';
}

/** Python's str.splitlines (no trailing empty line). */
export function splitLines(text: string): string[] {
  // eslint-disable-next-line no-control-regex -- Python's line boundaries include these separators
  const lines = text.split(/\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/);
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

function contentLines(text: string, strategy: Strategy): string[] {
  if (!text) return [];
  if (strategy === 'documentation') {
    return text
      .trim()
      .split(/(?<=[.!?])\s+(?=[A-Z])/)
      .map((sentence) => sentence.trim().replace(/\s+/g, ' '))
      .filter(Boolean);
  }
  const keepIndent = strategy === 'code';
  return splitLines(text)
    .map((line) => (keepIndent ? line.trimEnd() : line.trim()))
    .filter(Boolean);
}

/**
 * Letta's LineChunker.chunk_text: the file's lines numbered from 1, `[start, end)` of them (0-based),
 * headed by what is in view. An offset past the end is an error, as is `start >= end` when validated.
 */
export function chunkFile(
  file: { file_name: string; file_type: string | null; content: string | null },
  range: { start?: number | null; end?: number | null; validate?: boolean; metadata?: boolean } = {},
): string[] {
  const strategy = chunkingStrategy(file);
  if (!file.content) return [];
  let lines = contentLines(file.content, strategy);
  const total = lines.length;
  const kind = strategy === 'documentation' ? 'sentences' : 'lines';
  let start = range.start ?? null;
  let end = range.end ?? null;
  let offset = 0;
  if (start !== null || end !== null) {
    if (start !== null && end !== null && start >= end && range.validate)
      throw new Error(`Invalid range: start (${start}) must be less than end (${end})`);
    if (start !== null && start >= total)
      throw new Error(
        `File ${file.file_name} has only ${total} ${kind}, but requested offset ${start + 1} is out of range`,
      );
    if (start !== null) start = Math.max(0, start);
    if (end !== null) end = Math.min(end, total);
    lines = lines.slice(start ?? 0, end ?? undefined);
    offset = start ?? 0;
  }
  const numbered = lines.map((line, i) => `${i + offset + 1}: ${line}`);
  if (range.metadata !== false) {
    if (start !== null && end !== null)
      numbered.unshift(`[Viewing ${kind} ${start + 1} to ${end} (out of ${total} ${kind})]`);
    else if (start !== null)
      numbered.unshift(`[Viewing ${kind} ${start + 1} to end (out of ${total} ${kind})]`);
    else numbered.unshift(`[Viewing file start (out of ${total} ${kind})]`);
  }
  return numbered;
}

/** Letta's truncate_file_visible_content: nothing for a closed file, a cut with a note past the limit. */
export function truncateVisibleContent(content: string | null, isOpen: boolean, limit: number): string {
  let visible = content && isOpen ? content : '';
  if (visible.length > limit) {
    const warning = `...[TRUNCATED]\n${FILE_IS_TRUNCATED_WARNING}`;
    visible = visible.slice(0, Math.max(0, limit - warning.length)) + warning;
  }
  return visible;
}

// ---------------------------------------------------------------------------------------------------
// Opening and closing, with Letta's LRU rule.

/**
 * Serializes changes to one agent's open files (the agent's row lock, in `agentLock`'s mode, until the
 * transaction ends).
 */
async function lockAgent(db: Queryable, agentId: string): Promise<void> {
  await db.query('SELECT id FROM agents WHERE id = $1 FOR NO KEY UPDATE', [agentId]);
}

type Transactional = Queryable & { transaction?: <T>(work: (tx: Queryable) => Promise<T>) => Promise<T> };

/** Runs `work` in a transaction holding the agent's lock when `db` can start one (else in `db`'s). */
export function withAgentFiles<T>(db: Queryable, agentId: string, work: (tx: Queryable) => Promise<T>) {
  const run = async (tx: Queryable) => {
    await lockAgent(tx, agentId);
    return work(tx);
  };
  const transactional = db as Transactional;
  return transactional.transaction ? transactional.transaction(run) : run(db);
}

export interface OpenResult {
  closed: string[];
  wasOpen: boolean;
  /** The lines in view before, when they change: [start, end] (1-based, null: from the start / to the end). */
  previousRange?: [number | null, number | null];
}

/**
 * Letta's enforce_max_open_files_and_open: opens one file with the given view, closing the least
 * recently used others beyond `maxFilesOpen`. Call within `withAgentFiles`.
 */
export async function openFileView(
  tx: Queryable,
  view: Omit<views.FileViewWrite, 'isOpen'> & { visibleContent: string },
  maxFilesOpen: number,
): Promise<OpenResult> {
  const open = await views.openFileViews(tx, view.agentId);
  const existing = await views.fileViewByName(tx, view.agentId, view.fileName);
  const others = open.filter((row) => row.file_name !== view.fileName);
  const wasOpen = Boolean(existing?.is_open);
  let previousRange: OpenResult['previousRange'];
  if (wasOpen && existing) {
    const changed = existing.start_line !== view.startLine || existing.end_line !== view.endLine;
    const ranged =
      existing.start_line !== null ||
      existing.end_line !== null ||
      view.startLine !== null ||
      view.endLine !== null;
    if (ranged && changed) previousRange = [existing.start_line, existing.end_line];
  }
  const excess = others.length - (maxFilesOpen - 1);
  const closing = excess > 0 ? others.slice(0, excess) : [];
  await views.closeFileViews(
    tx,
    view.agentId,
    closing.map((row) => row.file_id),
  );
  await views.writeFileView(tx, { ...view, fileId: existing?.file_id ?? view.fileId, isOpen: true });
  return { closed: closing.map((row) => row.file_name), wasOpen, previousRange };
}

/**
 * Letta's attach_files_bulk: gives the agent views of `files`, opening them (their whole text, with
 * line numbers) as far as `maxFilesOpen` allows, the new ones first, then the most recently used of
 * those already open. Returns the names it closed. Call within `withAgentFiles`.
 */
export async function attachFilesBulk(
  tx: Queryable,
  agentId: string,
  files: FolderFileRow[],
  maxFilesOpen: number,
): Promise<string[]> {
  const unique = files.filter((f, i) => files.findIndex((g) => g.file_name === f.file_name) === i);
  if (!unique.length) return [];
  const open = await views.openFileViews(tx, agentId);
  const newNames = unique.map((f) => f.file_name);
  const stillOpen = open.filter((row) => !newNames.includes(row.file_name)).map((row) => row.file_name);
  const finalOpen =
    newNames.length >= maxFilesOpen
      ? newNames.slice(0, maxFilesOpen)
      : [...newNames, ...stillOpen.slice(Math.max(0, stillOpen.length - (maxFilesOpen - newNames.length)))];
  const closed = open.filter((row) => !finalOpen.includes(row.file_name)).map((row) => row.file_name);
  if (newNames.length >= maxFilesOpen) closed.push(...newNames.slice(maxFilesOpen));
  const [{ now }] = await tx.query<{ now: Date }>('SELECT clock_timestamp() AS now');
  for (const file of unique) {
    const isOpen = finalOpen.includes(file.file_name);
    const existing = await views.fileViewByName(tx, agentId, file.file_name);
    await views.writeFileView(tx, {
      agentId,
      fileId: existing?.file_id ?? file.id,
      folderId: file.folder_id,
      fileName: file.file_name,
      isOpen,
      visibleContent: isOpen ? chunkFile(file).join('\n') : null,
      startLine: existing?.start_line ?? null,
      endLine: existing?.end_line ?? null,
      accessedAt: now,
    });
  }
  await views.closeFileViews(
    tx,
    agentId,
    open.filter((row) => closed.includes(row.file_name)).map((row) => row.file_id),
  );
  return closed;
}

/**
 * Letta's insert_file_into_context_windows: a file that has completed ingestion is opened, whole, in
 * the context of every agent its folder is attached to (closing their least recently used files
 * beyond their `max_files_open`).
 */
export async function showFileToAgents(db: Queryable, fileId: string): Promise<void> {
  const file = await views.getFolderFile(db, fileId);
  if (!file) return;
  for (const agent of await views.folderAgents(db, file.folder_id)) {
    await withAgentFiles(db, agent.id, (tx) =>
      attachFilesBulk(tx, agent.id, [file], fileLimits(agent).maxFilesOpen),
    );
  }
}

/**
 * Attaches a folder as Letta does: the file tools the agent lacks, then a view of each of its files
 * (Letta's insert_files_into_context_window).
 */
export async function attachFolderToAgent(db: Queryable, agent: AgentRow, folderId: string): Promise<void> {
  await withAgentFiles(db, agent.id, async (tx) => {
    await views.attachFolder(tx, agent.id, folderId);
    const have = new Set((await agentTools(tx, agent.id)).map((tool) => tool.name));
    const missing = (await toolsWhere(tx, 'name', [...FILE_TOOLS])).filter(
      (tool) => tool.tool_type === FILE_TOOL_TYPE && !have.has(tool.name),
    );
    await attachTools(
      tx,
      agent.id,
      missing.map((tool) => tool.id),
    );
    const files = await views.folderFiles(tx, folderId);
    await attachFilesBulk(tx, agent.id, files, fileLimits(agent).maxFilesOpen);
  });
}

/** Detaches a folder and its files' views; with the last folder go the file tools, as in Letta. */
export async function detachFolderFromAgent(db: Queryable, agentId: string, folderId: string): Promise<void> {
  await withAgentFiles(db, agentId, async (tx) => {
    await views.detachFolder(tx, agentId, folderId);
    if ((await views.agentFolders(tx, agentId)).length) return;
    const fileTools = (await agentTools(tx, agentId)).filter((tool) => tool.tool_type === FILE_TOOL_TYPE);
    if (fileTools.length)
      await detachTools(
        tx,
        agentId,
        fileTools.map((tool) => tool.id),
      );
  });
}

// ---------------------------------------------------------------------------------------------------
// The context: Letta's Memory._render_directories_common.

const escapeNothing = (text: string | null | undefined) => text ?? '';

/** A file as the context shows it: Letta's FileBlock. */
function fileBlockValue(view: FileAgentRow, charLimit: number): string {
  return truncateVisibleContent(view.visible_content, view.is_open, charLimit);
}

/**
 * The `<directories>` section of the system prompt: the file limits, then each attached folder with
 * its description, instructions and files, the open ones with their text in view.
 */
export function renderDirectories(directories: AgentDirectories | undefined, limits: FileLimits): string {
  if (!directories?.folders.length) return '';
  const blocks = directories.files.map((view) => ({ view, value: fileBlockValue(view, limits.charLimit) }));
  let s = '\n\n<directories>\n';
  s += '<file_limits>\n';
  s += `- current_files_open=${blocks.filter((b) => b.value).length}\n`;
  s += `- max_files_open=${limits.maxFilesOpen}\n`;
  s += '</file_limits>\n';
  for (const folder of directories.folders) {
    s += `<directory name="${escapeNothing(folder.name)}">\n`;
    if (folder.description) s += `<description>${folder.description}</description>\n`;
    if (folder.instructions) s += `<instructions>${folder.instructions}</instructions>\n`;
    for (const { view, value } of blocks) {
      if (view.folder_id !== folder.id) continue;
      s += `<file status="${value ? 'open' : 'closed'}" name="${view.file_name || 'file'}">\n`;
      s += '<metadata>';
      s += '\n- read_only=true';
      s += `\n- chars_current=${value.length}\n`;
      s += `- chars_limit=${limits.charLimit}\n`;
      s += '</metadata>\n';
      if (value) s += `<value>\n${value}\n</value>\n`;
      s += '</file>\n';
    }
    s += '</directory>\n';
  }
  s += '</directories>';
  return s;
}

/** Letta's FileBlock of a view, for AgentState's `memory.file_blocks`. */
export function fileBlock(view: FileAgentRow, charLimit: number) {
  return {
    value: fileBlockValue(view, charLimit),
    label: view.file_name,
    read_only: true,
    limit: charLimit,
    file_id: view.file_id,
    source_id: view.folder_id,
    is_open: view.is_open,
    last_accessed_at: view.last_accessed_at,
  };
}
