import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { ingestionWorkflowId, resumePendingIngestions } from '../src/agent/folders';
import os from 'node:os';
import path from 'node:path';
import Letta, { toFile } from '@letta-ai/letta-client';
import type { FileListResponse } from '@letta-ai/letta-client/resources/folders/files';
import pg from 'pg';
import { startEmbeddingStub, type EmbeddingStub } from './helpers/embedding-stub';
import { eventually } from './helpers/eventually';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { testTemporalAddress } from './helpers/env';
import type { StartedProcess } from './helpers/process';
import { apiUrl, killProcess, serverProcessEnv, startApiProcess } from './helpers/server-processes';
import { startTestServer, type TestServer } from './helpers/server';

const PDF = fs.readFileSync(path.join(__dirname, 'fixtures/folders/lighthouse.pdf'));

/** A text of `n` sentences, each naming its number, so every chunk can be told apart. */
const sentences = (n: number, topic = 'lighthouse') =>
  Array.from({ length: n }, (_, i) => `Sentence ${i} tells about the ${topic} number ${i}.`).join(' ');

type Db = { query<T>(sql: string, params?: unknown[]): Promise<T[]> };

/** Each chunk of a file once: passages per (file, chunk) and their count against total_chunks. */
async function chunkCounts(db: Db, fileId: string) {
  const [row] = await db.query<{ passages: number; distinct_chunks: number; max_index: number | null }>(
    `SELECT count(*)::int AS passages, count(DISTINCT chunk_index)::int AS distinct_chunks,
            max(chunk_index) AS max_index
     FROM archival_passages WHERE file_id = $1`,
    [fileId],
  );
  return row;
}

const ENV = {
  EMBEDDING_BATCH_SIZE: '2',
  FILE_CHUNK_SIZE: '16',
  FILE_CHUNK_OVERLAP: '0',
  EMBEDDING_RETRY_INITIAL_MS: '100',
  FILE_MAX_BYTES: '20000',
  FOLDER_MAX_FILES: '6',
};

describe('folders and file ingestion', () => {
  let stub: EmbeddingStub;
  let server: TestServer;
  let client: Letta;

  beforeAll(async () => {
    stub = await startEmbeddingStub();
    server = await startTestServer({ OPENAI_BASE_URL: stub.baseURL, OPENAI_API_KEY: 'test-key', ...ENV });
    client = new Letta({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.stopAll();
    await stub?.close();
  });

  let folderCount = 0;
  const newFolder = (extra: Record<string, unknown> = {}) =>
    client.folders.create({
      name: `docs-${++folderCount}`,
      embedding: 'openai/text-embedding-3-small',
      ...extra,
    });
  const upload = async (
    folderId: string,
    data: Buffer | string,
    name: string,
    extra: Record<string, unknown> = {},
  ) =>
    client.folders.files.upload(folderId, {
      file: await toFile(Buffer.from(data), name),
      ...extra,
    });
  const settled = (folderId: string, fileId: string) =>
    eventually(
      () => client.folders.files.retrieve(fileId, { folder_id: folderId }),
      (file) => file.processing_status === 'completed' || file.processing_status === 'error',
      30_000,
    );
  const rawFetch = (method: string, route: string, body?: unknown) =>
    fetch(`${server.url}${route}`, {
      method,
      headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });

  it('creates, lists, retrieves, updates and deletes folders in Letta’s shapes', async () => {
    const folder = await newFolder({ description: 'handbooks', embedding_chunk_size: 64 });
    expect(folder).toMatchObject({
      id: expect.stringMatching(/^source-/),
      description: 'handbooks',
      embedding_config: {
        embedding_model: 'text-embedding-3-small',
        embedding_endpoint_type: 'openai',
        embedding_chunk_size: 64,
      },
    });
    await expect(client.folders.create({ name: folder.name, embedding: 'openai/x' })).rejects.toMatchObject({
      status: 409,
    });
    await expect(client.folders.create({ name: 'no-model' })).rejects.toMatchObject({ status: 400 });
    expect((await client.folders.list({ name: folder.name })).getPaginatedItems().map((f) => f.id)).toEqual([
      folder.id,
    ]);
    const updated = await client.folders.update(folder.id, { instructions: 'read me first' });
    expect(updated).toMatchObject({ id: folder.id, instructions: 'read me first', description: 'handbooks' });
    expect(await client.folders.retrieve(folder.id)).toMatchObject({ instructions: 'read me first' });
    expect(await client.folders.agents.list(folder.id)).toEqual([]);
    // The legacy paths older clients call.
    const legacy = await rawFetch('GET', `/v1/sources/${folder.id}`);
    expect(legacy.status).toBe(200);
    expect(await legacy.json()).toMatchObject({ id: folder.id, name: folder.name });
    // The folder's archive is not an archive of its own.
    expect((await client.archives.list()).getPaginatedItems()).toEqual([]);

    await client.folders.delete(folder.id);
    await expect(client.folders.retrieve(folder.id)).rejects.toMatchObject({ status: 404 });
    expect((await rawFetch('GET', '/v1/folders/not-an-id')).status).toBe(422);
  });

  it('ingests a text file and a PDF to completed, each chunk once, and shows their content', async () => {
    const folder = await newFolder();
    const text = sentences(12);
    const notes = await upload(folder.id, text, 'notes.txt');
    expect(notes).toMatchObject({
      source_id: folder.id,
      file_name: `${folder.name}/notes.txt`,
      original_file_name: 'notes.txt',
      file_type: 'text/plain',
      file_size: Buffer.byteLength(text),
      processing_status: expect.stringMatching(/^(pending|parsing|embedding)$/),
    });
    const pdf = await upload(folder.id, PDF, 'lighthouse.pdf');
    expect(pdf.file_type).toBe('application/pdf');

    for (const file of [notes, pdf]) {
      const done = await settled(folder.id, file.id);
      expect(done).toMatchObject({ processing_status: 'completed', error_message: null });
      expect(done.total_chunks).toBeGreaterThan(1);
      expect(done.chunks_embedded).toBe(done.total_chunks);
      expect(await chunkCounts(server.db, file.id)).toEqual({
        passages: done.total_chunks,
        distinct_chunks: done.total_chunks,
        max_index: done.total_chunks! - 1,
      });
    }
    const pdfFile = await client.folders.files.retrieve(pdf.id, {
      folder_id: folder.id,
      include_content: true,
    });
    expect(pdfFile.file_name).toBe('lighthouse.pdf');
    expect(pdfFile.content).toContain('The durable lighthouse keeper logs every ship');
    expect(pdfFile.content).toContain('copper kettle');
    const listed = (await client.folders.files.list(folder.id)).getPaginatedItems();
    expect(listed.map((f) => f.file_name).sort()).toEqual(['lighthouse.pdf', 'notes.txt']);
    expect(listed.every((f: FileListResponse) => f.content === null)).toBe(true);

    // The passages are the chunks, in the folder's passages, whole.
    const response = await rawFetch('GET', `/v1/folders/${folder.id}/passages?limit=1000`);
    const passages = (await response.json()) as { text: string; file_id: string; source_id: string }[];
    const notesText = passages
      .filter((p) => p.file_id === notes.id)
      .map((p) => p.text)
      .join(' ');
    for (let i = 0; i < 12; i++) expect(notesText).toContain(`Sentence ${i} tells`);
    expect(passages.every((p) => p.source_id === folder.id)).toBe(true);
    // Chunks are staged only while a file is ingested.
    const [staged] = await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM file_chunks');
    expect(staged.n).toBe(0);
  });

  it('ingests Markdown, code, JSON, CSV and HTML', async () => {
    const folder = await newFolder();
    const files: [string, string, string][] = [
      ['readme.md', '# Title\n\nThe lighthouse keeper writes markdown.', 'text/markdown'],
      ['tool.py', 'def keeper():\n    return "lighthouse"\n', 'text/x-python'],
      ['data.json', '{"keeper": "lighthouse", "ships": [1, 2]}', 'application/json'],
      ['ships.csv', 'name,port\nAurora,Oslo\nBorealis,Bergen\n', 'text/csv'],
      [
        'page.html',
        '<html><body><h1>Harbor</h1><p>The <b>keeper</b> waves.</p><script>x()</script></body></html>',
        'text/html',
      ],
    ];
    for (const [name, body, type] of files) {
      const file = await upload(folder.id, body, name);
      expect(file.file_type).toBe(type);
      expect(await settled(folder.id, file.id)).toMatchObject({ processing_status: 'completed' });
    }
    const html = (await client.folders.files.list(folder.id, { include_content: true }))
      .getPaginatedItems()
      .find((f) => f.original_file_name === 'page.html')!;
    expect(html.content).toContain('The keeper waves.');
    expect(html.content).not.toContain('<b>');
    expect(html.content).not.toContain('x()');
  });

  it('follows Letta’s duplicate_handling: suffix (the default), skip, error, replace', async () => {
    const folder = await newFolder();
    const first = await upload(folder.id, sentences(3, 'harbor'), 'log.txt');
    await settled(folder.id, first.id);

    const suffixed = await upload(folder.id, sentences(3, 'tide'), 'log.txt');
    expect(suffixed.file_name).toBe(`${folder.name}/log_(1).txt`);
    expect(suffixed.id).not.toBe(first.id);

    const { data: skipped, response } = await client.folders.files
      .upload(folder.id, { file: await toFile(Buffer.from('other'), 'log.txt'), duplicate_handling: 'skip' })
      .withResponse();
    expect(skipped.id).toBe(first.id);
    expect(response.headers.get('x-upload-result')).toBe('skipped');

    await expect(
      upload(folder.id, 'again', 'log.txt', { duplicate_handling: 'error' }),
    ).rejects.toMatchObject({ status: 400 });

    await settled(folder.id, suffixed.id);
    const replaced = await upload(folder.id, sentences(4, 'storm'), 'log.txt', {
      duplicate_handling: 'replace',
    });
    expect(replaced.file_name).toBe(`${folder.name}/log.txt`);
    await expect(client.folders.files.retrieve(first.id, { folder_id: folder.id })).rejects.toMatchObject({
      status: 404,
    });
    expect(await settled(folder.id, replaced.id)).toMatchObject({ processing_status: 'completed' });
    expect((await chunkCounts(server.db, first.id)).passages).toBe(0);

    // A name of the client's choosing.
    const named = await upload(folder.id, 'x y z.', 'whatever.txt', { name: 'chosen.md' });
    expect(named).toMatchObject({ original_file_name: 'chosen.md', file_type: 'text/markdown' });
    expect(
      (await client.folders.files.list(folder.id))
        .getPaginatedItems()
        .map((f) => f.original_file_name)
        .sort(),
    ).toEqual(['chosen.md', 'log.txt', 'log.txt']);
  });

  it('refuses an unknown type, a file over the size limit and a folder past its file limit with 4xx, storing nothing', async () => {
    const folder = await newFolder();
    const files = async () => (await client.folders.files.list(folder.id)).getPaginatedItems();
    await expect(upload(folder.id, Buffer.from([0x4d, 0x5a, 0, 1]), 'tool.exe')).rejects.toMatchObject({
      status: 415,
    });
    await expect(upload(folder.id, 'x'.repeat(20_001), 'big.txt')).rejects.toMatchObject({ status: 413 });
    expect(await files()).toEqual([]);
    const [stored] = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM files WHERE folder_id = $1',
      [folder.id],
    );
    expect(stored.n).toBe(0);

    // Not multipart, no file: FastAPI's 422.
    const bare = await rawFetch('POST', `/v1/folders/${folder.id}/upload`, { file: 'x' });
    expect(bare.status).toBe(422);
    await expect(upload('source-00000000-0000-4000-8000-000000000000', 'x', 'a.txt')).rejects.toMatchObject({
      status: 404,
    });

    for (let i = 0; i < 6; i++) await upload(folder.id, `Note ${i}.`, `n${i}.txt`);
    await expect(upload(folder.id, 'one too many.', 'n6.txt')).rejects.toMatchObject({ status: 409 });
    expect(await files()).toHaveLength(6);
  });

  it('marks a file that cannot be parsed as error, with the reason', async () => {
    const folder = await newFolder();
    const broken = await upload(folder.id, '%PDF-1.4 not really', 'broken.pdf');
    const done = await settled(folder.id, broken.id);
    expect(done.processing_status).toBe('error');
    expect(done.error_message).toMatch(/PDF/);
  });

  it('retries a batch the embedding provider refused with 429, and stores each chunk once', async () => {
    const folder = await newFolder();
    const refusedBefore = stub.refused;
    stub.refuseNext(429, 1);
    const file = await upload(folder.id, sentences(10, 'gale'), 'gale.txt');
    const done = await settled(folder.id, file.id);
    expect(done.processing_status).toBe('completed');
    expect(stub.refused).toBe(refusedBefore + 1);
    expect(await chunkCounts(server.db, file.id)).toEqual({
      passages: done.total_chunks,
      distinct_chunks: done.total_chunks,
      max_index: done.total_chunks! - 1,
    });
  });

  it('starts the ingestion of an upload the API stored but never started, and only once', async () => {
    const folder = await newFolder();
    const fileId = `file-${randomUUID()}`;
    // As an API killed between storing the upload and starting its workflow leaves it.
    await server.db.query(
      `INSERT INTO files (id, folder_id, file_name, original_file_name, file_type, file_size, data, workflow_id)
       VALUES ($1, $2, $3, 'orphan.txt', 'text/plain', 10, $4, $5)`,
      [
        fileId,
        folder.id,
        `${folder.name}/orphan.txt`,
        Buffer.from(sentences(3, 'orphan')),
        ingestionWorkflowId(server.turns.deploymentId, fileId),
      ],
    );
    expect(await resumePendingIngestions(server.turns)).toBe(1);
    expect((await settled(folder.id, fileId)).processing_status).toBe('completed');
    expect(await resumePendingIngestions(server.turns)).toBe(0);
  });

  it('deletes a file with its passages, and a folder with its files, over both paths', async () => {
    const folder = await newFolder();
    const a = await upload(folder.id, sentences(3), 'a.txt');
    const b = await upload(folder.id, sentences(3), 'b.txt');
    await settled(folder.id, a.id);
    await settled(folder.id, b.id);
    await client.folders.files.delete(a.id, { folder_id: folder.id });
    expect((await chunkCounts(server.db, a.id)).passages).toBe(0);
    expect((await client.folders.files.list(folder.id)).getPaginatedItems().map((f) => f.id)).toEqual([b.id]);
    expect((await rawFetch('DELETE', `/v1/sources/${folder.id}/${a.id}`)).status).toBe(404);

    expect((await rawFetch('DELETE', `/v1/sources/${folder.id}`)).status).toBe(200);
    expect((await chunkCounts(server.db, b.id)).passages).toBe(0);
    const [left] = await server.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM files WHERE id = $1',
      [b.id],
    );
    expect(left.n).toBe(0);
  });
});

/**
 * kill -9 of the server while a file is being embedded: the server started again finishes the file,
 * and every chunk is stored exactly once.
 */
describe('file ingestion across a kill -9 of the server', () => {
  let dataDir: string;
  let schema: TestSchema;
  let stub: EmbeddingStub;
  let env: Record<string, string>;
  let server: StartedProcess | undefined;
  let db: pg.Client;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-folders-'));
    schema = await createTestSchema();
    stub = await startEmbeddingStub();
    env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: testTemporalAddress(),
      openAiBaseUrl: stub.baseURL,
      extra: { ...ENV, FILE_MAX_BYTES: '1000000', ACTIVITY_HEARTBEAT_TIMEOUT_MS: '2000' },
    });
    db = new pg.Client({ connectionString: schema.url });
    await db.connect();
  });
  afterAll(async () => {
    if (server) await killProcess(server, 'SIGKILL');
    await db?.end();
    await stub?.close();
    await schema?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('resumes the ingestion after the restart, losing and duplicating nothing', async () => {
    server = await startApiProcess(env, 'all');
    const client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 });
    const folder = await client.folders.create({
      name: 'durable',
      embedding: 'openai/text-embedding-3-small',
    });
    stub.setDelay(250);
    const file = await client.folders.files.upload(folder.id, {
      file: await toFile(Buffer.from(sentences(40, 'beacon')), 'beacon.txt'),
    });
    const query = <T>(sql: string, params: unknown[] = []) =>
      db.query(sql, params).then((r) => r.rows as T[]);
    const midway = await eventually(
      () =>
        query<{ chunks_embedded: number | null; total_chunks: number | null }>(
          'SELECT chunks_embedded, total_chunks FROM files WHERE id = $1',
          [file.id],
        ),
      ([row]) => (row?.chunks_embedded ?? 0) >= 4,
      30_000,
    );
    const [before] = midway;
    expect(before.total_chunks).toBeGreaterThan(before.chunks_embedded! + 4);
    await killProcess(server, 'SIGKILL');
    server = undefined;
    const embeddedBefore = (await chunkCounts({ query }, file.id)).passages;
    expect(embeddedBefore).toBeLessThan(before.total_chunks!);

    stub.setDelay(0);
    server = await startApiProcess(env, 'all');
    const done = await eventually(
      () => client.folders.files.retrieve(file.id, { folder_id: folder.id }),
      (f) => f.processing_status === 'completed' || f.processing_status === 'error',
      60_000,
    );
    expect(done).toMatchObject({ processing_status: 'completed', chunks_embedded: before.total_chunks });
    expect(await chunkCounts({ query }, file.id)).toEqual({
      passages: before.total_chunks,
      distinct_chunks: before.total_chunks,
      max_index: before.total_chunks! - 1,
    });
  });
});
