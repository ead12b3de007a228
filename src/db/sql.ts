import type { Queryable } from './database';

/** `value` as a jsonb parameter: pg would send a JS array as a Postgres array, not JSON. */
export const json = (value: unknown) =>
  value === null || value === undefined ? null : JSON.stringify(value);

/**
 * `UPDATE <table> SET <given columns>, updated_at = now() WHERE id = $1`; undefined fields are left
 * alone. Column names come from our code, never from a request.
 */
export async function updateById(
  db: Queryable,
  table: string,
  id: string,
  fields: Record<string, unknown>,
  jsonColumns: readonly string[] = [],
): Promise<void> {
  const entries = Object.entries(fields).filter(([key, value]) => value !== undefined && key !== 'id');
  if (entries.length === 0) return;
  const sets = entries.map(([key], i) => `${key} = $${i + 2}`);
  const values = entries.map(([key, value]) => (jsonColumns.includes(key) ? json(value) : value));
  await db.query(`UPDATE ${table} SET ${sets.join(', ')}, updated_at = now() WHERE id = $1`, [id, ...values]);
}

/** A WHERE clause built up condition by condition, each `?` bound to the next parameter. */
export function whereClause(initialParams: unknown[] = []) {
  const params = [...initialParams];
  const clauses: string[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  return {
    params,
    param,
    add(clause: string, value?: unknown) {
      clauses.push(value === undefined ? clause : clause.replaceAll('?', param(value)));
    },
    toString: () => (clauses.length ? `WHERE ${clauses.join(' AND ')}` : ''),
  };
}

export interface Page {
  before?: string;
  after?: string;
  limit: number;
  order: 'asc' | 'desc';
}

/** Keyset pagination on (created_at, id) with `before` / `after` ids: adds the cursor conditions, returns the tail. */
export function pageByCreatedAt(where: ReturnType<typeof whereClause>, table: string, page: Page): string {
  const cursor = `(SELECT created_at, id FROM ${table} WHERE id = ?)`;
  if (page.after) where.add(`(created_at, id) > ${cursor}`, page.after);
  if (page.before) where.add(`(created_at, id) < ${cursor}`, page.before);
  const direction = page.order === 'asc' ? 'ASC' : 'DESC';
  return `ORDER BY created_at ${direction}, id ${direction} LIMIT ${where.param(page.limit)}`;
}

/** A statement refused by a UNIQUE constraint (SQLSTATE 23505), from pg or PGlite alike. */
export const isUniqueViolation = (error: unknown) => (error as { code?: unknown })?.code === '23505';
