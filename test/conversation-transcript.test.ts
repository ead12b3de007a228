import { readTranscript, TranscriptCache } from '../src/db/transcripts';
import { conversationContext, conversationMessages, messageOfToolCall } from '../src/db/messages';
import { useTestDatabase } from './helpers/test-database';
import { explaining, rowsRead } from './helpers/query-plans';

/**
 * A conversation's messages read by its turns on the database alone: the model's transcript and the
 * conversation's own listings read that conversation's messages, not every message of its agent, so an
 * agent with many conversations (a paused turn in each) answers in one as fast as in its first.
 */
describe("a conversation's messages", () => {
  const h = useTestDatabase();
  const CONVERSATIONS = 20;
  const MESSAGES = 30;

  beforeAll(async () => {
    // Agent ta: its own history (run trd) and conversations tc0.. (run trN each), MESSAGES each.
    await h.db.exec(`
      INSERT INTO agents (id, name, agent_type, system, llm_config) VALUES ('ta', 'a', 'letta_v1_agent', '', '{}');
      INSERT INTO conversations (id, agent_id) SELECT 'tc' || c, 'ta' FROM generate_series(0, ${CONVERSATIONS - 1}) c
      UNION ALL SELECT 'tcx', 'ta';
      INSERT INTO runs (id, agent_id, status, workflow_id, conversation_id)
      SELECT 'tr' || c, 'ta', 'completed', 'w', 'tc' || c FROM generate_series(0, ${CONVERSATIONS - 1}) c
      UNION ALL SELECT 'trd', 'ta', 'completed', 'w', NULL
      UNION ALL SELECT 'trx', 'ta', 'completed', 'w', 'tcx';
      -- A call in conversation tcx, its return, and then every message of every other conversation.
      INSERT INTO messages (id, agent_id, run_id, role, tool_calls) VALUES
        ('tcall', 'ta', 'trx', 'assistant', '[{"id": "call-x", "name": "ask", "arguments": "{}"}]');
      INSERT INTO messages (id, agent_id, run_id, role, tool_returns) VALUES
        ('treturn', 'ta', 'trx', 'tool', '[{"tool_call_id": "call-x", "status": "success"}]');
      INSERT INTO messages (id, agent_id, run_id, role, content)
      SELECT 'tm' || c || '-' || i, 'ta', CASE WHEN c < 0 THEN 'trd' ELSE 'tr' || c END,
        CASE WHEN i % 2 = 0 THEN 'user' ELSE 'assistant' END, jsonb_build_array(jsonb_build_object('type', 'text', 'text', c || '/' || i))
      FROM generate_series(0, ${MESSAGES - 1}) i, generate_series(-1, ${CONVERSATIONS - 1}) c
      ORDER BY i, c;
    `);
    await h.db.exec('ANALYZE messages');
  });

  const conversations = [
    { runId: 'trd', conversationId: null, prefix: 'tm-1-' },
    { runId: 'tr7', conversationId: 'tc7', prefix: 'tm7-' },
  ];

  it.each(conversations)('reads the transcript of $conversationId from its own messages', async (c) => {
    const transcript = await readTranscript(h.db, new TranscriptCache(10_000), {
      agentId: 'ta',
      runId: c.runId,
    });
    expect(transcript.map((row) => (row.content as { text: string }[])[0].text)).toEqual(
      Array.from({ length: MESSAGES }, (_, i) => `${c.prefix.slice(2, -1)}/${i}`),
    );
    const { explainer, plans } = explaining(h.db);
    await readTranscript(explainer, new TranscriptCache(10_000), { agentId: 'ta', runId: c.runId });
    expect(rowsRead(plans[0]).messages).toBeLessThanOrEqual(MESSAGES);
  });

  it.each(conversations)('lists the messages and the context of $conversationId from its own', async (c) => {
    const ref = { agentId: 'ta', conversationId: c.conversationId };
    const listed = await conversationMessages(h.db, ref);
    expect(listed.map((m) => m.id)).toEqual(Array.from({ length: MESSAGES }, (_, i) => `${c.prefix}${i}`));
    expect((await conversationContext(h.db, ref)).transcript.map((m) => m.id)).toEqual(
      listed.map((m) => m.id),
    );
    const { explainer, plans } = explaining(h.db);
    await conversationMessages(explainer, ref);
    await conversationContext(explainer, ref);
    for (const plan of plans) expect(rowsRead(plan).messages ?? 0).toBeLessThanOrEqual(MESSAGES);
  });

  it("finds the call a return answers among its run's conversation's messages", async () => {
    const scope = { agentId: 'ta', runId: 'trx' };
    expect((await messageOfToolCall(h.db, scope, 'call-x'))?.id).toBe('tcall');
    const { explainer, plans } = explaining(h.db);
    await messageOfToolCall(explainer, scope, 'call-x');
    expect(rowsRead(plans[0]).messages).toBeLessThanOrEqual(2);
  });

  it("checks a new message's place in the history against its conversation's messages alone", async () => {
    const fetched = await h.db.transaction(async (tx) => {
      // The backend's counts not yet reported included: the difference is the insert's.
      const read = async () =>
        (
          await tx.query<{ read: number }>(
            `SELECT (idx_tup_fetch + seq_tup_read)::int AS read FROM pg_stat_xact_user_tables
             WHERE relid = 'messages'::regclass`,
          )
        )[0].read;
      const before = await read();
      await tx.exec(`INSERT INTO messages (id, agent_id, run_id, role, content)
        VALUES ('tnext', 'ta', 'trx', 'user', '[{"type": "text", "text": "next"}]')`);
      return (await read()) - before;
    });
    // The message before it in its conversation.
    expect(fetched).toBeLessThanOrEqual(2);
    // The invariant holds still: a user message before a call's return is refused.
    await expect(
      h.db.exec(`
        INSERT INTO messages (id, agent_id, run_id, role, tool_calls)
          VALUES ('tcall2', 'ta', 'trx', 'assistant', '[{"id": "call-y", "name": "ask", "arguments": "{}"}]');
        INSERT INTO messages (id, agent_id, run_id, role, content) VALUES ('tearly', 'ta', 'trx', 'user', '[]');`),
    ).rejects.toThrow(/history invariant/);
  });
});
