import { openDatabase, type Database } from '../src/db';
import { insertMessage, resetHistory, setContextWindow } from '../src/db/messages';
import { readTranscript, TranscriptCache } from '../src/db/transcripts';
import { newId } from '../src/ids';
import { ensureBuiltinTools } from '../src/tools/builtin';
import { silentLogger, testConfig } from './helpers/env';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { agentWithRun } from './helpers/runs';

/**
 * The transcript a model call reads, with what the worker kept of the call before (src/db/transcripts.ts),
 * is the whole transcript read afresh, whatever happened between the two: messages added, a message
 * committed late under an older seq, a compaction, a reset. The invariant is checked at every step.
 */
describe('the transcripts model calls keep between steps', () => {
  let schema: TestSchema;
  let db: Database;
  beforeAll(async () => {
    schema = await createTestSchema();
    db = await openDatabase(testConfig({ DATABASE_URL: schema.url }), silentLogger());
    await ensureBuiltinTools(db);
  });
  afterAll(async () => {
    await db?.close();
    await schema?.drop();
  });

  const say = (agentId: string, runId: string, text: string, role: 'user' | 'assistant' = 'user') =>
    insertMessage(db, {
      id: newId('message'),
      agent_id: agentId,
      run_id: runId,
      role,
      content: [{ type: 'text', text }],
    });

  /** Reads with `cache` and afresh, and requires the two to be the same; returns the texts read. */
  const readBoth = async (cache: TranscriptCache, key: { agentId: string; runId: string }) => {
    const kept = await readTranscript(db, cache, key);
    const afresh = await readTranscript(db, new TranscriptCache(0), key);
    expect(kept).toEqual(afresh);
    return kept.map((row) => (row.content as { text: string }[])[0].text);
  };

  it('reads what came since, and reads afresh when what it kept is no longer so', async () => {
    const { agentId, runId } = await agentWithRun(db);
    const cache = new TranscriptCache(1_000);
    await say(agentId, runId, 'one');
    expect(await readBoth(cache, { agentId, runId })).toEqual(['one']);
    await say(agentId, runId, 'two', 'assistant');
    await say(agentId, runId, 'three');
    expect(await readBoth(cache, { agentId, runId })).toEqual(['one', 'two', 'three']);

    // A message committed after a later one: its seq is older than what the cache knows.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const late = db.transaction(async (tx) => {
      await insertMessage(tx, {
        id: newId('message'),
        agent_id: agentId,
        run_id: runId,
        role: 'assistant',
        content: [{ type: 'text', text: 'late' }],
      });
      await held;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await say(agentId, runId, 'after');
    expect(await readBoth(cache, { agentId, runId })).toEqual(['one', 'two', 'three', 'after']);
    release();
    await late;
    expect(await readBoth(cache, { agentId, runId })).toEqual(['one', 'two', 'three', 'late', 'after']);
    await say(agentId, runId, 'four', 'assistant');
    expect(await readBoth(cache, { agentId, runId })).toEqual([
      'one',
      'two',
      'three',
      'late',
      'after',
      'four',
    ]);

    // A reset deletes the messages, in the same window; a compaction moves the window's start.
    await resetHistory(db, { agentId, conversationId: null });
    await say(agentId, runId, 'five');
    expect(await readBoth(cache, { agentId, runId })).toEqual(['five']);
    await say(agentId, runId, 'six', 'assistant');
    const seven = await say(agentId, runId, 'seven');
    expect(await readBoth(cache, { agentId, runId })).toEqual(['five', 'six', 'seven']);
    await setContextWindow(db, { agentId, conversationId: null }, seven.seq, 'a summary');
    expect(await readBoth(cache, { agentId, runId })).toEqual(['seven']);
    await say(agentId, runId, 'eight', 'assistant');
    expect(await readBoth(cache, { agentId, runId })).toEqual(['seven', 'eight']);
  });

  it('keeps the last transcript of each agent, the least recently read dropped past its size', async () => {
    const cache = new TranscriptCache(3);
    const a = await agentWithRun(db);
    const b = await agentWithRun(db);
    await say(a.agentId, a.runId, 'a1');
    await say(a.agentId, a.runId, 'a2', 'assistant');
    await say(b.agentId, b.runId, 'b1');
    expect(await readBoth(cache, a)).toEqual(['a1', 'a2']);
    expect(await readBoth(cache, b)).toEqual(['b1']);
    await say(b.agentId, b.runId, 'b2', 'assistant');
    // b's three messages leave no room for a's two: a's are dropped, and read afresh next time.
    expect(await readBoth(cache, b)).toEqual(['b1', 'b2']);
    expect(await readBoth(cache, a)).toEqual(['a1', 'a2']);
  });

  it('may keep what it read: the database refuses to change what a model reads of a stored message', async () => {
    const { agentId, runId } = await agentWithRun(db);
    const message = await say(agentId, runId, 'as said');
    await expect(
      db.query(`UPDATE messages SET content = '[{"type":"text","text":"rewritten"}]' WHERE id = $1`, [
        message.id,
      ]),
    ).rejects.toThrow(`message ${message.id}: only its metadata may change once stored`);
    await db.query(`UPDATE messages SET metadata = '{"feedback":"positive"}' WHERE id = $1`, [message.id]);
  });
});
