import pg from 'pg';
import { testDatabaseUrl, uniqueSuffix } from './env';

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
