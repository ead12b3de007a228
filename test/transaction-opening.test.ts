import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectPostgres, openPglite, type Database } from '../src/db/database';
import { agentLock } from '../src/db/agents';
import { createTestSchema, type TestSchema } from './helpers/postgres';

/** What every transaction that opens with a statement must do, on either kind of database. */
function opensWithTheStatement(open: () => Promise<{ db: Database; close(): Promise<void> }>) {
  let db: Database;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ db, close } = await open());
    await db.exec(`CREATE TABLE things (id text PRIMARY KEY, note text); INSERT INTO things (id) VALUES ('a');
      CREATE TABLE agents (id text PRIMARY KEY, name text); INSERT INTO agents VALUES ('agent-1', 'one')`);
  });
  afterAll(() => close?.());

  it("hands the opening statement's rows to the work", async () => {
    const rows = await db.transaction(
      async (_tx, opened) => opened,
      "SELECT id FROM things WHERE id = 'a' FOR UPDATE",
    );
    expect(rows).toEqual([{ id: 'a' }]);
  });

  it('undoes the opening statement with the rest when the work fails', async () => {
    const failing = db.transaction(async (tx) => {
      await tx.query('UPDATE things SET note = $1 WHERE id = $2', ['later', 'a']);
      throw new Error('the work failed');
    }, "UPDATE things SET note = 'opened' WHERE id = 'a' RETURNING id");
    await expect(failing).rejects.toThrow('the work failed');
    expect(await db.query('SELECT note FROM things')).toEqual([{ note: null }]);
  });

  it("locks and reads an agent's row, its id quoted as a value, never as SQL", async () => {
    const lockRead = (id: string) => db.transaction(async (_tx, opened) => opened, agentLock(id));
    expect(await lockRead('agent-1')).toEqual([{ id: 'agent-1', name: 'one' }]);
    expect(await lockRead("agent-1' OR true; DROP TABLE things; --")).toEqual([]);
    expect(await lockRead("it's \\ quoted")).toEqual([]);
    expect(await db.query('SELECT id FROM things')).toEqual([{ id: 'a' }]);
  });
}

describe('a transaction opening with a statement, on PostgreSQL', () => {
  let schema: TestSchema;
  opensWithTheStatement(async () => {
    schema = await createTestSchema();
    const db = connectPostgres(schema.url, 2);
    return { db, close: async () => (await db.close(), await schema.drop()) };
  });
});

describe('a transaction opening with a statement, on PGlite', () => {
  opensWithTheStatement(async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'opening-'));
    const db = await openPglite(path.join(dir, 'db'));
    return { db, close: async () => (await db.close(), fs.rmSync(dir, { recursive: true, force: true })) };
  });
});
