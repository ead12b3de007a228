import type { Queryable } from './database';
import { newId } from '../ids';
import type { ToolRow } from './rows';
import { json, pageOf, whereClause, type Page } from './sql';

/** A tool's fields as the registry decides them; id, version and times are the database's. */
export type ToolFields = Omit<ToolRow, 'id' | 'version' | 'created_at' | 'updated_at'>;

const JSON_COLUMNS = ['json_schema', 'args_json_schema', 'pip_requirements', 'npm_requirements', 'metadata'];
const COLUMNS = [
  'name',
  'tool_type',
  'description',
  'source_type',
  'source_code',
  'json_schema',
  'args_json_schema',
  'tags',
  'return_char_limit',
  'pip_requirements',
  'npm_requirements',
  'default_requires_approval',
  'enable_parallel_execution',
  'metadata',
] as const;

const values = (fields: ToolFields) =>
  COLUMNS.map((column) => (JSON_COLUMNS.includes(column) ? json(fields[column]) : fields[column]));

async function recordVersion(db: Queryable, tool: ToolRow): Promise<ToolRow> {
  await db.query(
    `INSERT INTO tool_versions (tool_id, version, tool) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
    [tool.id, tool.version, json(tool)],
  );
  return tool;
}

export async function insertTool(db: Queryable, id: string, fields: ToolFields): Promise<ToolRow> {
  const placeholders = COLUMNS.map((_, i) => `$${i + 2}`).join(', ');
  const [row] = await db.query<ToolRow>(
    `INSERT INTO tools (id, ${COLUMNS.join(', ')}) VALUES ($1, ${placeholders}) RETURNING *`,
    [id, ...values(fields)],
  );
  return recordVersion(db, row);
}

/** Replaces a tool's fields as a new version. */
export async function updateTool(db: Queryable, id: string, fields: ToolFields): Promise<ToolRow> {
  const sets = COLUMNS.map((column, i) => `${column} = $${i + 2}`).join(', ');
  const [row] = await db.query<ToolRow>(
    `UPDATE tools SET ${sets}, version = version + 1, updated_at = now() WHERE id = $1 RETURNING *`,
    [id, ...values(fields)],
  );
  return recordVersion(db, row);
}

export function getTool(db: Queryable, id: string): Promise<ToolRow | undefined> {
  return db.query<ToolRow>('SELECT * FROM tools WHERE id = $1', [id]).then((rows) => rows[0]);
}

export function getToolByName(db: Queryable, name: string): Promise<ToolRow | undefined> {
  return db.query<ToolRow>('SELECT * FROM tools WHERE name = $1', [name]).then((rows) => rows[0]);
}

/** The tool as it was at `version` (what a turn resolved at its start). */
export async function getToolVersion(
  db: Queryable,
  id: string,
  version: number,
): Promise<ToolRow | undefined> {
  const [row] = await db.query<{ tool: ToolRow }>(
    'SELECT tool FROM tool_versions WHERE tool_id = $1 AND version = $2',
    [id, version],
  );
  return row?.tool;
}

export async function deleteTool(db: Queryable, id: string): Promise<boolean> {
  return (await db.query('DELETE FROM tools WHERE id = $1 RETURNING id', [id])).length > 0;
}

export interface ToolFilters {
  name?: string;
  names?: string[];
  toolTypes?: string[];
  search?: string;
}

export function listTools(db: Queryable, filters: ToolFilters, page: Page): Promise<ToolRow[]> {
  const where = whereClause();
  if (filters.name) where.add('name = ?', filters.name);
  if (filters.names?.length) where.add('name = ANY(?)', filters.names);
  if (filters.toolTypes?.length) where.add('tool_type = ANY(?)', filters.toolTypes);
  if (filters.search) where.add(`name ILIKE ?`, `%${filters.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  return pageOf<ToolRow>(db, 'tools', where, page);
}

/** The tools whose `column` is one of `values`. */
export function toolsWhere(db: Queryable, column: 'id' | 'name', values: string[]): Promise<ToolRow[]> {
  return db.query<ToolRow>(`SELECT * FROM tools WHERE ${column} = ANY($1)`, [values]);
}

/** The tools an MCP server gave, oldest first. */
export function toolsOfMcpServer(db: Queryable, serverId: string): Promise<ToolRow[]> {
  return db.query<ToolRow>(
    `SELECT * FROM tools WHERE metadata -> 'mcp' ->> 'server_id' = $1 ORDER BY created_at, id`,
    [serverId],
  );
}

/**
 * A built-in tool as this version of the server defines it, inserted or brought up to date by name; a
 * custom or MCP tool of its name (made before this version had the built-in) stays as it is.
 */
export async function upsertBuiltinTool(
  db: Queryable,
  tool: Pick<ToolRow, 'name' | 'tool_type' | 'description' | 'json_schema' | 'enable_parallel_execution'>,
): Promise<void> {
  await db.query(
    `INSERT INTO tools (id, name, tool_type, description, source_type, json_schema, tags, enable_parallel_execution)
     VALUES ($1, $2, $3, $4, 'python', $5, $6, $7)
     ON CONFLICT (name) DO UPDATE SET tool_type = $3, description = $4, json_schema = $5, tags = $6,
       enable_parallel_execution = $7, updated_at = now()
     WHERE tools.tool_type LIKE 'letta\\_%'`,
    [
      newId('tool'),
      tool.name,
      tool.tool_type,
      tool.description,
      JSON.stringify(tool.json_schema),
      [tool.tool_type],
      tool.enable_parallel_execution,
    ],
  );
}

/**
 * Tools whose name, description or tags match the query, best first (full-text rank, then a match in
 * the name); all of them (newest first) without a query.
 */
export function searchTools(
  db: Queryable,
  filters: { query?: string; tags?: string[]; toolTypes?: string[] },
  limit: number,
): Promise<(ToolRow & { score: number })[]> {
  const where = whereClause();
  let score = '0';
  if (filters.query?.trim()) {
    const text = where.param(filters.query);
    const document = `to_tsvector('english', name || ' ' || coalesce(description, '') || ' ' || array_to_string(tags, ' '))`;
    const query = `websearch_to_tsquery('english', ${text})`;
    where.add(`(${document} @@ ${query} OR strpos(lower(name), lower(${text})) > 0)`);
    score = `ts_rank(${document}, ${query}) + CASE WHEN strpos(lower(name), lower(${text})) > 0 THEN 1 ELSE 0 END`;
  }
  if (filters.tags?.length) where.add('tags && ?', filters.tags);
  if (filters.toolTypes?.length) where.add('tool_type = ANY(?)', filters.toolTypes);
  return db.query<ToolRow & { score: number }>(
    `SELECT *, ${score} AS score FROM tools ${where} ORDER BY score DESC, created_at DESC LIMIT ${where.param(limit)}`,
    where.params,
  );
}
