import { vector } from '@electric-sql/pglite-pgvector';
import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';

/** What repositories need: one statement with parameters, or a script of several without. */
export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>;
  exec(script: string): Promise<void>;
}

/** A LISTEN on a channel: `ended` settles when it is closed or its connection is lost. */
export interface Subscription {
  ended: Promise<void>;
  close(): Promise<void>;
}

/** PostgreSQL behind one interface, whether a server (`pg`) or embedded (PGlite): same SQL either way. */
export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /**
   * Runs `work` in a transaction. An `opening` statement (no parameters: a lock, see `agentLock`) goes
   * to the server with the BEGIN, in one round trip, and `work` gets its rows.
   */
  transaction<T, Row = Record<string, unknown>>(
    work: (tx: Queryable, opened: Row[]) => Promise<T>,
    opening?: string,
  ): Promise<T>;
  /** Hands each NOTIFY payload of `channel` to `onPayload`. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<Subscription>;
  close(): Promise<void>;
}

// int8 (bigint, count(*)) arrives from pg as a string; PGlite gives a number. Numbers it is, both ways:
// the values we store (counts, sizes, sequence numbers) stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/**
 * Statements with parameters are prepared once per connection, under a name per SQL text: PostgreSQL
 * then parses and plans each once instead of at every call (a third of its CPU on the agent turn's
 * short queries). A prepared `SELECT *` fails once another process adds a column to its table (a
 * rolling upgrade's migration); that statement then runs unprepared from there on (within a
 * transaction, after the transaction's retry). Names are per SQL text, and every text is built from
 * code (values go in parameters), so they stay few. A pooler between us and PostgreSQL must keep
 * prepared statements per client (PgBouncer 1.21+ with max_prepared_statements, or session mode).
 */
const statementNames = new Map<string, string>();
const unpreparable = new Set<string>();
const CHANGED_RESULT_TYPE = 'cached plan must not change result type';

function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (!name) statementNames.set(sql, (name = `letta_${statementNames.size}`));
  return name;
}

async function runStatement(client: pg.Pool | pg.PoolClient, sql: string, params?: unknown[]) {
  if (!params || unpreparable.has(sql)) return client.query(sql, params);
  try {
    return await client.query({ name: statementName(sql), text: sql, values: params });
  } catch (error) {
    if (!(error instanceof Error && error.message === CHANGED_RESULT_TYPE)) throw error;
    unpreparable.add(sql);
    if (!(client instanceof pg.Pool)) throw error; // a transaction is void once a statement failed
    return client.query(sql, params);
  }
}

function wrapPgClient(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async query(sql, params) {
      return (await runStatement(client, sql, params)).rows;
    },
    async exec(script) {
      await client.query(script);
    },
  };
}

export function connectPostgres(connectionString: string, poolSize = 10): Database {
  const pool = new pg.Pool({ connectionString, max: poolSize });
  // An idle client losing its server connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  return {
    kind: 'postgres',
    ...wrapPgClient(pool),
    async transaction(work, opening) {
      const client = await pool.connect();
      try {
        const result = await work(wrapPgClient(client), await begin(client, opening));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    listen: (channel, onPayload) => listenOn(connectionString, channel, onPayload),
    close: () => pool.end(),
  };
}

/** BEGIN, with the transaction's opening statement in the same script: one round trip for both. */
async function begin<Row>(client: pg.PoolClient, opening?: string): Promise<Row[]> {
  if (!opening) {
    await client.query('BEGIN');
    return [];
  }
  const [, opened] = (await client.query(`BEGIN; ${opening}`)) as unknown as pg.QueryResult[];
  return opened.rows as Row[];
}

/** LISTEN needs a connection of its own, outside the pool: it stays subscribed as long as it lives. */
async function listenOn(
  connectionString: string,
  channel: string,
  onPayload: (payload: string) => void,
): Promise<Subscription> {
  const client = new pg.Client({ connectionString });
  const ended = new Promise<void>((resolve) => {
    client.once('end', resolve);
    client.once('error', () => resolve());
  });
  client.on('error', () => {}); // reported through `ended`
  client.on('notification', (message) => onPayload(message.payload ?? ''));
  try {
    await client.connect();
    await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }
  return { ended, close: () => client.end() };
}

function wrapPglite(db: Pick<PGlite, 'query' | 'exec'>): Queryable {
  return {
    async query<Row>(sql: string, params?: unknown[]) {
      return (await db.query<Row>(sql, params)).rows;
    },
    async exec(script: string) {
      await db.exec(script);
    },
  };
}

/** An embedded PostgreSQL (WASM) persisted in `dir`: one connection, so statements queue up in order. */
export async function openPglite(dir: string): Promise<Database> {
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  // pgvector, for archival memory's embeddings (migration 0012).
  const db = await PGlite.create(dir, { extensions: { vector } });
  return {
    kind: 'pglite',
    ...wrapPglite(db),
    transaction: (work, opening) =>
      db.transaction(async (tx) =>
        work(wrapPglite(tx), opening ? (await tx.query<never>(opening)).rows : []),
      ),
    async listen(channel, onPayload) {
      const unlisten = await db.listen(channel, onPayload);
      let end = () => {};
      const ended = new Promise<void>((resolve) => (end = resolve));
      return { ended, close: () => unlisten().finally(end) };
    },
    close: () => db.close(),
  };
}
