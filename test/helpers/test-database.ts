import { openDatabase, type Database } from '../../src/db';
import { ensureBuiltinTools } from '../../src/tools/builtin';
import { silentLogger, testConfig } from './env';
import { createTestSchema, type TestSchema } from './postgres';

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
