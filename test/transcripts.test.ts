import type { Queryable } from '../src/db';
import { insertMessage, resetHistory, setContextWindow } from '../src/db/messages';
import { readTranscript, TranscriptCache } from '../src/db/transcripts';
import { newId } from '../src/ids';
import { useTestDatabase } from './helpers/test-database';
import { agentWithRun } from './helpers/runs';

/**
 * The transcript a model call reads, with what the worker kept of the call before (src/db/transcripts.ts),
 * is the whole transcript read afresh, whatever happened between the two: messages added, a message
 * committed late under an older seq, a compaction, a reset. The invariant is checked at every step.
 */
describe('the transcripts model calls keep between steps', () => {
  const database = useTestDatabase();

  const say = (
    agentId: string,
    runId: string,
    text: string,
    role: 'user' | 'assistant' = 'user',
    q: Queryable = database.db,
  ) =>
    insertMessage(q, {
      id: newId('message'),
      agent_id: agentId,
      run_id: runId,
      role,
      content: [{ type: 'text', text }],
    });

  /** Reads with `cache` and afresh, and requires the two to be the same; returns the texts read. */
  const readBoth = async (cache: TranscriptCache, key: { agentId: string; runId: string }) => {
    const kept = await readTranscript(database.db, cache, key);
    const afresh = await readTranscript(database.db, new TranscriptCache(0), key);
    expect(kept).toEqual(afresh);
    return kept.map((row) => (row.content as { text: string }[])[0].text);
  };

  it('reads what came since, and reads afresh when what it kept is no longer so', async () => {
    const { agentId, runId } = await agentWithRun(database.db);
    const cache = new TranscriptCache(1_000);
    await say(agentId, runId, 'one');
    expect(await readBoth(cache, { agentId, runId })).toEqual(['one']);
    await say(agentId, runId, 'two', 'assistant');
    await say(agentId, runId, 'three');
    expect(await readBoth(cache, { agentId, runId })).toEqual(['one', 'two', 'three']);

    // A message committed after a later one: its seq is older than what the cache knows.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const late = database.db.transaction(async (tx) => {
      await say(agentId, runId, 'late', 'assistant', tx);
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
    await resetHistory(database.db, { agentId, conversationId: null });
    await say(agentId, runId, 'five');
    expect(await readBoth(cache, { agentId, runId })).toEqual(['five']);
    await say(agentId, runId, 'six', 'assistant');
    const seven = await say(agentId, runId, 'seven');
    expect(await readBoth(cache, { agentId, runId })).toEqual(['five', 'six', 'seven']);
    await setContextWindow(database.db, { agentId, conversationId: null }, seven.seq, 'a summary');
    expect(await readBoth(cache, { agentId, runId })).toEqual(['seven']);
    await say(agentId, runId, 'eight', 'assistant');
    expect(await readBoth(cache, { agentId, runId })).toEqual(['seven', 'eight']);
  });

  it('keeps the last transcript of each agent, the least recently read dropped past its size', async () => {
    const cache = new TranscriptCache(3);
    const a = await agentWithRun(database.db);
    const b = await agentWithRun(database.db);
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
    const { agentId, runId } = await agentWithRun(database.db);
    const message = await say(agentId, runId, 'as said');
    await expect(
      database.db.query(
        `UPDATE messages SET content = '[{"type":"text","text":"rewritten"}]' WHERE id = $1`,
        [message.id],
      ),
    ).rejects.toThrow(`message ${message.id}: only its metadata may change once stored`);
    await database.db.query(`UPDATE messages SET metadata = '{"feedback":"positive"}' WHERE id = $1`, [
      message.id,
    ]);
  });
});
