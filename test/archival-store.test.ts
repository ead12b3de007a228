import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectPostgres, openPglite, type Database } from '../src/db/database';
import { migrate } from '../src/db/migrate';
import { embeddingKind, insertArchive, insertPassages, searchPassages } from '../src/db/archives';
import { newId } from '../src/ids';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { stubEmbedding } from './helpers/openai-stub';

const TEXTS = ['I like green tea in the morning', 'The deploy runs on Fridays', 'Tea with milk is fine too'];

/**
 * Archival search on both kinds of store: pgvector (PGlite ships it) and the plain real[] column a
 * PostgreSQL without the extension gets (the one on these machines), ranked the same.
 */
describe.each([
  ['PGlite, with pgvector', 'vector'],
  ['PostgreSQL without pgvector', 'real[]'],
])('archival passages on %s', (_name, kind) => {
  let db: Database;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    if (kind === 'vector') {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'archival-'));
      db = await openPglite(path.join(dir, 'pgdata'));
      cleanup = async () => fs.rmSync(dir, { recursive: true, force: true });
    } else {
      const schema: TestSchema = await createTestSchema();
      db = connectPostgres(schema.url, 2);
      cleanup = () => schema.drop();
    }
    await migrate(db);
  });
  afterAll(async () => {
    await db?.close();
    await cleanup?.();
  });

  it('stores unit embeddings and ranks by cosine similarity, with tag and date filters', async () => {
    expect(await embeddingKind(db)).toBe(kind);
    const archive = await insertArchive(db, newId('archive'), {
      name: 'a',
      description: null,
      embedding_config: null,
      metadata: null,
    });
    const config = { embedding_model: 'stub' };
    const stored = await insertPassages(
      db,
      archive.id,
      TEXTS.map((text, i) => ({
        id: newId('passage'),
        text,
        tags: i === 2 ? ['drinks'] : [],
        embedding: stubEmbedding(text),
        embedding_config: config,
        created_at: `2025-0${i + 1}-01T00:00:00Z`,
      })),
    );
    expect(stored[0].embedding).toHaveLength(stubEmbedding('x').length);
    const search = (query: string, extra = {}) =>
      searchPassages(
        db,
        { archiveId: archive.id },
        { embedding: stubEmbedding(query), tagMatchMode: 'any', limit: 3, ...extra },
      );
    const ranked = await search('green tea');
    expect(ranked.map((p) => p.text)).toEqual([TEXTS[0], TEXTS[2], TEXTS[1]]);
    expect(ranked[0].score).toBeGreaterThan(ranked[1].score);
    expect((await search('tea', { tags: ['drinks'] })).map((p) => p.text)).toEqual([TEXTS[2]]);
    expect((await search('tea', { end: new Date('2025-01-15') })).map((p) => p.text)).toEqual([TEXTS[0]]);
    // Another model's vectors (other dimensions) are left out, not compared.
    expect(await search('tea', { embedding: [1, 0, 0] })).toEqual([]);
  });
});
