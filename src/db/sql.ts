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

/** What a keyset page is read by: the key it is ordered on, and how a cursor's id finds its key. */
export interface Keyset {
  /** The columns the listing is ordered on, e.g. `seq` or `created_at, id`. */
  key: string;
  /** A subquery giving the key of the item whose id is `?`. */
  cursor: string;
}

/**
 * One page of a listing, in Letta's terms: ordered on the keyset in `page.order`; `after` the items
 * beyond the cursor in that order, `before` those ahead of it; the `limit` nearest the cursor either
 * way, in the listing's order. The client's auto-pagination (`after` = the page's last item, or
 * `before` = its first) then visits every item once, in either order.
 */
export async function keysetPage<T>(
  db: Queryable,
  select: string,
  where: ReturnType<typeof whereClause>,
  page: Page,
  { key, cursor }: Keyset,
): Promise<T[]> {
  const asc = page.order === 'asc';
  if (page.after) where.add(`(${key}) ${asc ? '>' : '<'} ${cursor}`, page.after);
  if (page.before) where.add(`(${key}) ${asc ? '<' : '>'} ${cursor}`, page.before);
  // Paging backwards takes the items nearest the cursor: read the other way round, then turn them.
  const backwards = Boolean(page.before) && !page.after;
  const direction = asc !== backwards ? 'ASC' : 'DESC';
  const order = key
    .split(',')
    .map((column) => `${column.trim()} ${direction}`)
    .join(', ');
  const rows = await db.query<T>(
    `${select} ${where} ORDER BY ${order} LIMIT ${where.param(page.limit)}`,
    where.params,
  );
  return backwards ? rows.reverse() : rows;
}

/** A page of a table's rows, by creation (created_at, then id). */
export function pageOf<T>(
  db: Queryable,
  table: string,
  where: ReturnType<typeof whereClause>,
  page: Page,
  columns = '*',
): Promise<T[]> {
  return keysetPage<T>(db, `SELECT ${columns} FROM ${table}`, where, page, {
    key: 'created_at, id',
    cursor: `(SELECT created_at, id FROM ${table} WHERE id = ?)`,
  });
}

/** A statement refused by a UNIQUE constraint (SQLSTATE 23505), from pg or PGlite alike. */
export const isUniqueViolation = (error: unknown) => (error as { code?: unknown })?.code === '23505';
