import pg from 'pg';
import { openDatabase, type Database } from '../../src/db';
import { ensureBuiltinTools } from '../../src/tools/builtin';
import { silentLogger, testConfig, testDatabaseUrl, uniqueSuffix } from './env';

export interface TestSchema {
  name: string;
  /** DATABASE_URL whose connections use only this schema. */
  url: string;
  drop(): Promise<void>;
}

/** A fresh schema in the test database, so test files never see each other's tables. */
export async function createTestSchema(): Promise<TestSchema> {
  const name = `test_${uniqueSuffix()}`;
  await adminQuery(`CREATE SCHEMA ${name}`);
  const url = new URL(testDatabaseUrl());
  url.searchParams.set('options', `-c search_path=${name}`);
  return { name, url: url.toString(), drop: () => adminQuery(`DROP SCHEMA IF EXISTS ${name} CASCADE`) };
}

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * For a describe block: a migrated database on a fresh schema, with Letta's built-in tools (`db`, once
 * its tests run); closed and dropped after them.
 */
export function useTestDatabase(): { db: Database } {
  const harness = {} as { db: Database };
  let schema: TestSchema | undefined;
  beforeAll(async () => {
    schema = await createTestSchema();
    harness.db = await openDatabase(testConfig({ DATABASE_URL: schema.url }), silentLogger());
    await ensureBuiltinTools(harness.db);
  });
  afterAll(async () => {
    await harness.db?.close();
    await schema?.drop();
  });
  return harness;
}
