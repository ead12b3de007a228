import { connectPostgres, type Database } from '../src/db/database';
import { createTestSchema, type TestSchema } from './helpers/postgres';

describe('statements prepared once per PostgreSQL connection', () => {
  let schema: TestSchema;
  let db: Database;
  let otherProcess: Database;

  beforeAll(async () => {
    schema = await createTestSchema();
    db = connectPostgres(schema.url, 1); // one connection: every statement prepared on it
    otherProcess = connectPostgres(schema.url, 1);
    await db.exec('CREATE TABLE things (id text PRIMARY KEY)');
    await db.query('INSERT INTO things (id) VALUES ($1)', ['a']);
  });
  afterAll(async () => {
    await db?.close();
    await otherProcess?.close();
    await schema?.drop();
  });

  it('reads rows with a column another process added after the statement was prepared', async () => {
    const read = () => db.query('SELECT * FROM things WHERE id = $1', ['a']);
    expect(await read()).toEqual([{ id: 'a' }]);
    await otherProcess.exec('ALTER TABLE things ADD COLUMN note text');
    expect(await read()).toEqual([{ id: 'a', note: null }]);
  });

  it('in a transaction, fails that once (the transaction is void) and works when retried', async () => {
    const readInTransaction = () =>
      db.transaction((tx) => tx.query('SELECT * FROM things WHERE id = $1 AND id IS NOT NULL', ['a']));
    expect(await readInTransaction()).toEqual([{ id: 'a', note: null }]);
    await otherProcess.exec('ALTER TABLE things ADD COLUMN size integer');
    await expect(readInTransaction()).rejects.toThrow('cached plan must not change result type');
    expect(await readInTransaction()).toEqual([{ id: 'a', note: null, size: null }]);
  });
});
