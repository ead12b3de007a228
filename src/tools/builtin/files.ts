/**
 * Letta's file tools (files_tool_executor.py): `open_files`, `grep_files` and
 * `semantic_search_files` over the files of the folders attached to the agent, with Letta's messages
 * and output formats. What the agent sees of each file lives in `files_agents`
 * (src/memory/file-views.ts); the files' chunks are passages of their folder's archive.
 */
import type { Queryable } from '../../db';
import * as views from '../../db/file-agents';
import { searchPassages } from '../../db/archives';
import type { AgentRow } from '../../db/rows';
import { embedTexts } from '../../memory/embeddings';
import type { Providers } from '../../memory/archival';
import { chunkFile, fileLimits, openFileView, withAgentFiles, splitLines } from '../../memory/file-views';
import { DomainError } from '../../errors';
import { ModelApiError } from '../../llm/types';
import { ToolError } from '../../returns/tool-error';

/** Limits of the file tools that an operator may change. */
export interface FileToolSettings {
  /** grep_files matches per page (Letta's GREP_PAGE_SIZE, 20). */
  grepPageSize: number;
}

export const DEFAULT_FILE_TOOL_SETTINGS: FileToolSettings = { grepPageSize: 20 };

// Letta's LettaFileToolExecutor constants.
const MAX_FILE_SIZE_BYTES = 50 * 1024 * 1024;
const MAX_TOTAL_CONTENT_SIZE = 200 * 1024 * 1024;
const MAX_REGEX_COMPLEXITY = 1000;
const MAX_TOTAL_MATCHES = 50;
const MAX_TOTAL_COLLECTED = 1000;

type Args = Record<string, unknown>;

export interface FileToolContext {
  db: Queryable;
  agent: AgentRow;
  providers: Providers;
  settings: FileToolSettings;
  signal?: AbortSignal;
}

/** Python's repr of a list of strings, as Letta's messages print them. */
const pythonList = (items: string[]) => `[${items.map((item) => `'${item}'`).join(', ')}]`;

const toolError = (error: unknown) => new ToolError(error instanceof Error ? error.message : String(error));

function optionalInt(value: unknown, name: string): number | null {
  if (value === undefined || value === null) return null;
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n))
    throw new ToolError(`invalid argument '${name}' (expected an integer)`);
  return n;
}

interface FileRequest {
  file_name: string;
  offset: number | null;
  length: number | null;
}

function parseRequests(value: unknown): FileRequest[] {
  if (!Array.isArray(value))
    throw new ToolError(`missing or invalid argument 'file_requests' (expected a list)`);
  return value.map((request) => {
    if (!request || typeof request !== 'object' || Array.isArray(request))
      throw new ToolError(`Invalid file request type: ${typeof request}. Expected dict or FileOpenRequest.`);
    const { file_name, offset, length } = request as Record<string, unknown>;
    if (typeof file_name !== 'string')
      throw new ToolError(`Invalid file request: 'file_name' must be a string`);
    return { file_name, offset: optionalInt(offset, 'offset'), length: optionalInt(length, 'length') };
  });
}

/** open_files: opens the files in the agent's context (with line ranges), closing the least recently used. */
export async function openFiles({ db, agent }: FileToolContext, args: Args): Promise<string> {
  const requests = parseRequests(args.file_requests);
  const closeAllOthers = args.close_all_others === true || args.close_all_others === 'true';
  const { maxFilesOpen } = fileLimits(agent);
  if (requests.length > maxFilesOpen)
    throw new ToolError(
      `Cannot open ${requests.length} files: exceeds configured maximum limit of ${maxFilesOpen} files`,
    );
  if (!requests.length) throw new ToolError('No file requests provided');
  const names = requests.map((r) => r.file_name);
  const attached = (await views.agentFileViews(db, agent.id)).map((view) => view.file_name);

  const closedByCloseAll = closeAllOthers ? await views.closeAllOtherFiles(db, agent.id, names) : [];
  const closedByLimit: string[] = [];
  const previousRanges = new Map<string, [number | null, number | null]>();
  for (const request of requests) {
    const result = await openRequested({ db, agent }, request, attached, maxFilesOpen);
    closedByLimit.push(...result.closed);
    if (result.previousRange) previousRanges.set(request.file_name, result.previousRange);
  }
  await views.markAccess(db, agent.id, names);

  return openedMessage(requests, previousRanges, closedByCloseAll, closedByLimit);
}

/** The lines a request asks for, 0-indexed from `start` to before `end` (null: from the first, to the last). */
function requestedLines({ file_name: name, offset, length }: FileRequest): {
  start: number | null;
  end: number | null;
} {
  if (offset === null && length === null) return { start: null, end: null };
  if (offset !== null && offset < 0)
    throw new ToolError(`Offset for file ${name} must be >= 0 (0-indexed), got ${offset}`);
  if (length !== null && length < 1)
    throw new ToolError(`Length for file ${name} must be >= 1, got ${length}`);
  const start = offset;
  return { start, end: start !== null && length !== null ? start + length : null };
}

/** Opens one requested file in the agent's context, closing the least recently used past the limit. */
async function openRequested(
  { db, agent }: Pick<FileToolContext, 'db' | 'agent'>,
  request: FileRequest,
  attached: string[],
  maxFilesOpen: number,
) {
  const name = request.file_name;
  const { start, end } = requestedLines(request);
  const view = await views.fileViewByName(db, agent.id, name);
  if (!view)
    throw new ToolError(
      `${name} not attached - did you get the filename correct? Currently you have the following files attached: ${pythonList(attached)}`,
    );
  const file = await views.getFolderFile(db, view.file_id);
  if (!file) throw new ToolError(`File with id=${view.file_id} not found`);
  let visible: string;
  try {
    visible = chunkFile(file, { start, end, validate: true }).join('\n');
  } catch (error) {
    throw toolError(error);
  }
  return withAgentFiles(db, agent.id, (tx) =>
    openFileView(
      tx,
      {
        agentId: agent.id,
        fileId: view.file_id,
        folderId: view.folder_id,
        fileName: name,
        visibleContent: visible,
        startLine: start !== null ? start + 1 : null,
        endLine: end,
      },
      maxFilesOpen,
    ),
  );
}

/** What open_files answers (Letta's words): the files opened, their earlier ranges, the files closed. */
function openedMessage(
  requests: FileRequest[],
  previousRanges: Map<string, [number | null, number | null]>,
  closedByCloseAll: string[],
  closedByLimit: string[],
): string {
  const previous = (name: string) => {
    const range = previousRanges.get(name);
    if (!range) return '';
    const [oldStart, oldEnd] = range;
    if (oldStart !== null && oldEnd !== null) return ` (previously lines ${oldStart}-${oldEnd})`;
    if (oldStart !== null) return ` (previously lines ${oldStart}-end)`;
    return ' (previously full file)';
  };
  const summaries = requests.map((r) => {
    if (r.offset !== null && r.length !== null)
      return `${r.file_name} (lines ${r.offset + 1}-${r.offset + r.length})${previous(r.file_name)}`;
    if (r.offset !== null) return `${r.file_name} (lines ${r.offset + 1}-end)${previous(r.file_name)}`;
    return `${r.file_name}${previous(r.file_name)}`;
  });
  let message =
    requests.length === 1
      ? `* Opened ${summaries[0]}`
      : `* Opened ${requests.length} files: ${summaries.join(', ')}`;
  if (closedByCloseAll.length)
    message += `\nNote: Closed ${closedByCloseAll.length} file(s) due to close_all_others=True: ${closedByCloseAll.join(', ')}`;
  if (closedByLimit.length)
    message += `\nNote: Closed ${closedByLimit.length} least recently used file(s) due to open file limit: ${closedByLimit.join(', ')}`;
  return message;
}

/** Python's `re` syntax that JavaScript spells otherwise: named groups. */
const jsPattern = (pattern: string) => pattern.replace(/\(\?P</g, '(?<').replace(/\(\?P=(\w+)\)/g, '\\k<$1>');

function compilePattern(pattern: string): RegExp {
  if (pattern.length > MAX_REGEX_COMPLEXITY)
    throw new ToolError(`Pattern too complex: ${pattern.length} chars > ${MAX_REGEX_COMPLEXITY} limit`);
  try {
    return new RegExp(jsPattern(pattern), 'im');
  } catch (error) {
    throw new ToolError(`Invalid regex pattern: ${(error as Error).message}`);
  }
}

/** Letta's _get_context_lines: the match and its neighbours, the match marked with `>`. */
function contextLines(lines: string[], index: number, around: number): string[] {
  if (!lines.length || around < 0) return [];
  const out: string[] = [];
  for (let i = Math.max(0, index - around); i < Math.min(lines.length, index + around + 1); i++)
    out.push(`${i === index ? '>' : ' '} ${lines[i]}`);
  return out;
}

/** grep_files: a regex over the files' lines, with context, 20 matches a page (Letta's format). */
export async function grepFiles({ db, agent, settings }: FileToolContext, args: Args): Promise<string> {
  if (typeof args.pattern !== 'string' || !args.pattern.trim())
    throw new ToolError('Empty search pattern provided');
  const pattern = args.pattern.trim();
  const regex = compilePattern(pattern);
  const { include, includeRegex } = includeFilter(args.include);
  const around =
    args.context_lines === undefined ? 1 : (optionalInt(args.context_lines, 'context_lines') ?? 0);
  let offset = optionalInt(args.offset, 'offset');
  if (offset !== null && offset < 0) offset = 0;

  let files = await views.agentFileContents(db, agent.id);
  if (!files.length) return 'No files are currently attached to search';
  if (includeRegex) {
    const count = files.length;
    files = files.filter((file) => includeRegex.test(file.view_name));
    if (!files.length) return `No files match the filename pattern '${include}' (filtered ${count} files)`;
  }
  const found = collectMatches(files, regex, around);
  await views.markAccess(db, agent.id, [...found.withMatches]);
  if (!found.matches.length) {
    let summary = `No matches found for pattern: '${pattern}'`;
    if (include) summary += ` in files matching '${include}'`;
    if (found.skipped > 0) summary += ` (searched ${found.processed} files, skipped ${found.skipped})`;
    return summary;
  }
  return matchesPage(found, pattern, offset ?? 0, settings.grepPageSize);
}

/** The `include` filename pattern: a glob (`*.py`) or a regex. */
function includeFilter(given: unknown): { include: string | null; includeRegex: RegExp | null } {
  let include = typeof given === 'string' ? given : null;
  let includeRegex: RegExp | null = null;
  if (include && include.trim()) {
    include = include.trim();
    let includePattern = include;
    if (include.includes('*') && ![...'^$()[]{}\\+'].some((c) => include!.includes(c))) {
      includePattern = include.replace(/\./g, '\\.').replace(/\*/g, '.*').replace(/\?/g, '.');
      if (!includePattern.endsWith('$')) includePattern += '$';
    }
    includeRegex = compilePattern(includePattern);
    includeRegex = new RegExp(includeRegex.source, 'i');
  }
  return { include, includeRegex };
}

/** The matches found, up to MAX_TOTAL_COLLECTED, and how many files were searched and skipped. */
interface GrepMatches {
  matches: [string, number, string[]][];
  withMatches: Set<string>;
  processed: number;
  skipped: number;
}

/** The matching lines of the files, with context; files past the size limits are skipped. */
function collectMatches(
  files: Awaited<ReturnType<typeof views.agentFileContents>>,
  regex: RegExp,
  around: number,
): GrepMatches {
  const found: GrepMatches = { matches: [], withMatches: new Set(), processed: 0, skipped: 0 };
  const { matches, withMatches } = found;
  let totalSize = 0;
  for (const file of files) {
    const size = Buffer.byteLength(file.content ?? '', 'utf8');
    if (size > MAX_FILE_SIZE_BYTES) {
      found.skipped++;
      continue;
    }
    totalSize += size;
    if (totalSize > MAX_TOTAL_CONTENT_SIZE) {
      found.skipped++;
      break;
    }
    found.processed++;
    let lines = chunkFile(file);
    if (lines[0]?.startsWith('[Viewing')) lines = lines.slice(1);
    for (const [index, line] of lines.entries()) {
      if (matches.length >= MAX_TOTAL_COLLECTED) break;
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const lineNumber = Number(line.slice(0, colon).trim());
      if (!Number.isInteger(lineNumber)) continue;
      if (regex.test(line.slice(colon + 1).trim())) {
        withMatches.add(file.file_name);
        matches.push([file.file_name, lineNumber, contextLines(lines, index, around)]);
      }
    }
    if (matches.length >= MAX_TOTAL_COLLECTED) break;
  }
  return found;
}

/** One page of the matches from `start`, with the counts per file and how to ask for the next page. */
function matchesPage(
  { matches, withMatches, skipped }: GrepMatches,
  pattern: string,
  start: number,
  pageSize: number,
): string {
  const total = matches.length;
  const end = start + pageSize;
  const page = matches.slice(start, end);
  const capped = total >= MAX_TOTAL_COLLECTED;
  const results: string[] = [];
  let summary = capped
    ? `Found ${MAX_TOTAL_COLLECTED}+ total matches across ${withMatches.size} files (showing matches ${start + 1}-${Math.min(end, total)} of ${MAX_TOTAL_COLLECTED}+)`
    : `Found ${total} total matches across ${withMatches.size} files (showing matches ${start + 1}-${Math.min(end, total)} of ${total})`;
  if (skipped > 0) summary += `\nNote: Skipped ${skipped} files due to size limits`;
  results.push(summary, '='.repeat(80));
  const counts = new Map<string, number>();
  for (const [name] of matches) counts.set(name, (counts.get(name) ?? 0) + 1);
  results.push('\nFiles with matches:');
  for (const [name, count] of [...counts].sort((a, b) => b[1] - a[1]))
    results.push(
      capped && count >= MAX_TOTAL_COLLECTED
        ? `  - ${name}: ${count}+ matches`
        : `  - ${name}: ${count} matches`,
    );
  results.push('');
  for (const [name, lineNumber, context] of page)
    results.push(`\n=== ${name}:${lineNumber} ===\n${context.join('\n')}`);
  results.push('');
  if (end < total) {
    results.push(`To see more matches, call: grep_files(pattern="${pattern}", offset=${end})`);
    if (capped)
      results.push(
        `Note: Only the first ${MAX_TOTAL_COLLECTED} matches were collected. There may be more matches beyond this limit.`,
      );
  } else {
    results.push(
      capped
        ? 'Showing last page of collected matches. There may be more matches beyond the collection limit.'
        : 'No more matches to show.',
    );
  }
  return results.join('\n');
}

/**
 * semantic_search_files: the passages of the agent's folders nearest the query, each folder's query
 * embedded with the folder's own embedding model (Letta's native search and format).
 */
export async function semanticSearchFiles(context: FileToolContext, args: Args): Promise<string> {
  const { db, agent, providers, signal } = context;
  if (typeof args.query !== 'string' || !args.query.trim())
    throw new ToolError('Empty search query provided');
  const query = args.query.trim();
  const limit = Math.min(optionalInt(args.limit, 'limit') ?? 5, MAX_TOTAL_MATCHES);

  const folders = await views.agentFolders(db, agent.id);
  const embeddings = new Map<string, number[]>();
  const found: { id: string; text: string; score: number; created_at: Date }[] = [];
  for (const folder of folders) {
    const key = JSON.stringify([
      folder.embedding_config.embedding_endpoint_type,
      folder.embedding_config.handle,
      folder.embedding_config.embedding_model,
    ]);
    let embedding = embeddings.get(key);
    if (!embedding) {
      try {
        [embedding] = await embedTexts(
          providers,
          folder.embedding_config,
          [query],
          `Folder ${folder.name}`,
          signal,
        );
      } catch (error) {
        if (error instanceof DomainError || (error instanceof ModelApiError && !error.retryable))
          throw new ToolError(error.message);
        throw error;
      }
      embeddings.set(key, embedding);
    }
    found.push(
      ...(await searchPassages(
        db,
        { archiveId: folder.archive_id },
        { embedding, tagMatchMode: 'any', limit: Math.max(limit, 1) },
      )),
    );
  }
  found.sort(
    (a, b) => b.score - a.score || new Date(b.created_at).getTime() - new Date(a.created_at).getTime(),
  );
  const passages = found.slice(0, limit);
  if (!passages.length) return `No semantic matches found for query: '${query}'`;

  const names = new Map(
    (
      await views.passageFiles(
        db,
        passages.map((p) => p.id),
      )
    ).map((p) => [p.id, p.file_name]),
  );
  const byFile = new Map<string, typeof passages>();
  for (const passage of passages) {
    const name = names.get(passage.id) || 'Unknown File';
    byFile.set(name, [...(byFile.get(name) ?? []), passage]);
  }
  const results: string[] = [];
  let count = 0;
  for (const [name, filePassages] of byFile) {
    for (const passage of filePassages) {
      count++;
      const lines = splitLines(passage.text.trim());
      const shown = lines.slice(0, 20).map((line) => `  ${line}`);
      if (lines.length > 20) shown.push(`  ... [truncated ${lines.length - 20} more lines]`);
      results.push(`\n=== ${name} (passage #${count}) ===\n${shown.join('\n')}`);
    }
  }
  await views.markAccess(
    db,
    agent.id,
    [...byFile.keys()].filter((name) => name !== 'Unknown File'),
  );
  const fileCount = byFile.size;
  const summary = `Found ${count} semantic matches in ${fileCount} file${fileCount !== 1 ? 's' : ''} for query: '${query}'`;
  return [summary, '='.repeat(summary.length), ...results].join('\n');
}

export const FILE_TOOL_FUNCTIONS = {
  open_files: openFiles,
  grep_files: grepFiles,
  semantic_search_files: semanticSearchFiles,
} as const;
