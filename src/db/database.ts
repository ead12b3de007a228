import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';

/** What repositories need: one statement with parameters, or a script of several without. */
export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>;
  exec(script: string): Promise<void>;
}

/** PostgreSQL behind one interface, whether a server (`pg`) or embedded (PGlite): same SQL either way. */
export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

// int8 (bigint, count(*)) arrives from pg as a string; PGlite gives a number. Numbers it is, both ways:
// the values we store (counts, sizes, sequence numbers) stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

function wrapPgClient(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async query(sql, params) {
      return (await client.query(sql, params)).rows;
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
    async transaction(work) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work(wrapPgClient(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
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
  const db = await PGlite.create(dir);
  return {
    kind: 'pglite',
    ...wrapPglite(db),
    transaction: (work) => db.transaction((tx) => work(wrapPglite(tx))),
    close: () => db.close(),
  };
}
