import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectPostgres, openPglite, type Database } from '../src/db/database';
import { migrate, SchemaTooNewError } from '../src/db/migrate';
import { migrations } from '../src/db/migrations';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { agentWithRun } from './helpers/runs';
import { ensureBuiltinTools } from '../src/tools/builtin';
import { insertMessage } from '../src/db/messages';
import { setPendingApproval } from '../src/db/conversations';
import { listWaitingCalls } from '../src/db/approval-requests';
import { waitingCallCounts } from '../src/db/gauges';
import { newId } from '../src/ids';

const latest = Math.max(...migrations.map((m) => m.version));

async function tables(db: Database): Promise<string[]> {
  const rows = await db.query<{ table_name: string }>(
    'SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1',
  );
  return rows.map((r) => r.table_name);
}

describe('migrations on PostgreSQL', () => {
  let schema: TestSchema;
  let db: Database;

  beforeEach(async () => {
    schema = await createTestSchema();
    db = connectPostgres(schema.url);
  });
  afterEach(async () => {
    await db.close();
    await schema.drop();
  });

  it('apply every version to an empty database, then nothing on a second run', async () => {
    expect(await tables(db)).toEqual([]);
    expect(await migrate(db)).toEqual(migrations.map((m) => m.version));
    expect(await tables(db)).toEqual(expect.arrayContaining(['schema_migrations', 'server_metadata']));
    expect(await migrate(db)).toEqual([]);
    const rows = await db.query<{ n: number }>('SELECT count(*) AS n FROM schema_migrations');
    expect(rows[0].n).toBe(migrations.length);
  });

  it('take turns when several processes migrate at once', async () => {
    const others = [connectPostgres(schema.url), connectPostgres(schema.url)];
    try {
      const results = await Promise.all([db, ...others].map((d) => migrate(d)));
      expect(results.flat().sort((a, b) => a - b)).toEqual(migrations.map((m) => m.version));
    } finally {
      await Promise.all(others.map((d) => d.close()));
    }
  });

  it('refuse a database whose schema is newer than the code, changing nothing', async () => {
    await migrate(db);
    await db.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
      latest + 1,
      'from the future',
    ]);
    const error = await migrate(db).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SchemaTooNewError);
    expect((error as Error).message).toMatch(
      `schema is at version ${latest + 1}, newer than this server knows (${latest})`,
    );
    const rows = await db.query<{ n: number }>('SELECT count(*) AS n FROM schema_migrations');
    expect(rows[0].n).toBe(migrations.length + 1);
  });

  it('roll back a migration that fails, leaving the earlier schema intact', async () => {
    const broken = {
      version: latest + 1,
      name: 'broken',
      sql: 'CREATE TABLE half_done (x int); SELECT nonsense;',
    };
    await expect(migrate(db, [...migrations, broken])).rejects.toThrow();
    expect(await tables(db)).toEqual([]);
  });
  it('record the pauses that wait as the approval inbox arrives, calls and kinds from what they kept', async () => {
    await migrate(
      db,
      migrations.filter((m) => m.version < 26),
    );
    expect(migrations.find((m) => m.version === 26)?.name).toBe('approval requests');
    await ensureBuiltinTools(db);
    const paused = await agentWithRun(db);
    await db.query(`UPDATE runs SET request_config = $2 WHERE id = $1`, [
      paused.runId,
      JSON.stringify({ client_tools: [{ name: 'read_local_file' }] }),
    ]);
    const calls = [
      { id: 'call_a', name: 'memory_insert', arguments: '{"label":"human","new_string":"x"}' },
      { id: 'call_b', name: 'read_local_file', arguments: '{"path":"/a"}' },
      { id: 'call_c', name: 'conversation_search', arguments: '{"query":"q"}' },
    ];
    const message = await insertMessage(db, {
      id: newId('message'),
      agent_id: paused.agentId,
      run_id: paused.runId,
      role: 'assistant',
      tool_calls: calls,
      metadata: { approval_request: { tool_call_ids: ['call_a', 'call_b'] } },
    });
    await setPendingApproval(
      db,
      { agentId: paused.agentId, conversationId: null },
      {
        run_id: paused.runId,
        workflow_id: 'turn-workflow',
        message_id: message.id,
        tool_call_ids: ['call_a', 'call_b'],
        requested_at: '2026-11-01T10:00:00.000Z',
        expires_at: null,
      },
    );

    await migrate(db);
    const [waiting, other] = await listWaitingCalls(db, {}, { limit: 10, order: 'asc' });
    expect(other).toMatchObject({ tool_call_id: 'call_b', kind: 'client_tool' });
    expect(waiting).toMatchObject({
      tool_call_id: 'call_a',
      kind: 'approval',
      agent_id: paused.agentId,
      run_id: paused.runId,
      workflow_id: 'turn-workflow',
      tool_call_ids: ['call_a', 'call_b'],
      arguments: calls[0].arguments,
    });
    expect(new Date(waiting.requested_at).toISOString()).toBe('2026-11-01T10:00:00.000Z');
    // The metrics' count starts from the calls waiting as its migration runs.
    expect(await waitingCallCounts(db)).toEqual(
      expect.arrayContaining([
        { kind: 'approval', count: 1 },
        { kind: 'client_tool', count: 1 },
      ]),
    );
  });
});

describe('migrations on embedded PGlite', () => {
  it('apply the same SQL and persist across reopening', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pglite-test-'));
    try {
      const first = await openPglite(path.join(dir, 'pgdata'));
      expect(await migrate(first)).toEqual(migrations.map((m) => m.version));
      await first.close();
      const second = await openPglite(path.join(dir, 'pgdata'));
      expect(await migrate(second)).toEqual([]);
      const [{ value }] = await second.query<{ value: string }>(
        "SELECT value FROM server_metadata WHERE key = 'instance_id'",
      );
      expect(value).toMatch(/^[0-9a-f-]{36}$/);
      await second.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
