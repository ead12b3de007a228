/**
 * The transcript a model call reads: the messages of its run's context window that the model sees
 * (src/memory/context.ts), in order, at every step of every turn. A long session (letta-code answering
 * client tools one by one) makes that thousands of messages a step; so each process keeps the last
 * transcript it read of each agent and reads only the messages after it.
 *
 * Correct by construction: a message's role, content, calls and returns never change once stored (the
 * database refuses it: migration 0034), and its `seq` is never reused; so the messages the window holds
 * up to the cached one's last `seq`, named by their seqs, are the cached ones exactly when the seqs are
 * the same. The statement returns the seqs up to the cached one's as one list, compared as text with the
 * cached list, and the fields of the newer messages only; seqs that differ (a reset deleted messages, a
 * message stored late under an older seq, another window of the agent) make the call read the whole
 * window again.
 */
import type { Queryable } from './database';
import type { TranscriptRow } from './rows';
import { inConversation } from './messages';

/** The last transcript a process read of an agent: its window and its messages, by seq. */
interface CachedTranscript {
  conversationId: string | null;
  startSeq: number;
  /** The messages' seqs in order, joined by commas, as the statement lists them. */
  seqs: string;
  lastSeq: number;
  rows: TranscriptRow[];
}

/** One newer message (none: a row of the window alone, its fields null), with the window's values. */
type Row = TranscriptRow & {
  seq: number | null;
  /** The seq up to which the cached transcript was offered (-1: none, or of another window). */
  known: number;
  /** The window's seqs up to `known`, joined by commas (null: none). */
  known_seqs: string | null;
  window_conversation: string | null;
  window_start: number;
};

/** The run's conversation and the start of its context window (a conversation's or the agent's own). */
export const WINDOW = `SELECT r.agent_id, r.conversation_id,
    CASE WHEN r.conversation_id IS NULL THEN a.context_start_seq ELSE c.context_start_seq END AS start_seq,
    CASE WHEN r.conversation_id IS NULL THEN a.context_summary ELSE c.context_summary END AS summary
  FROM runs r JOIN agents a ON a.id = r.agent_id LEFT JOIN conversations c ON c.id = r.conversation_id
  WHERE r.id = $1`;

/** The run's messages the model sees, bounded by the window's values read once (InitPlans). */
const IN_WINDOW = `${inConversation('m', '(SELECT agent_id FROM w)', '(SELECT conversation_id FROM w)')}
    AND m.seq >= (SELECT start_seq FROM w) AND m.role IN ('user', 'assistant', 'tool')`;

/**
 * The window's values as InitPlans (a materialized CTE read by scalar subqueries), so that the agent, its
 * conversation and the window's start bound the index scan of the conversation's messages in order
 * (inConversation): joined, the start would only filter every message of the agent. Of the messages up
 * to `known` ($2, when the window is the cached one's: $3, $4) only their seqs come back, as one list;
 * a row per newer message, or one row of the window alone.
 */
const TRANSCRIPT = `WITH w AS MATERIALIZED (${WINDOW}),
  k AS MATERIALIZED (SELECT CASE WHEN conversation_id IS NOT DISTINCT FROM $3::text AND start_seq = $4::bigint
      THEN $2::bigint ELSE -1 END AS known FROM w),
  s AS MATERIALIZED (SELECT string_agg(m.seq::text, ',' ORDER BY m.seq) AS seqs FROM messages m
    WHERE ${IN_WINDOW} AND m.seq <= (SELECT known FROM k))
  SELECT (SELECT known FROM k) AS known, (SELECT seqs FROM s) AS known_seqs,
    w.conversation_id AS window_conversation, w.start_seq AS window_start,
    m.seq, m.role, m.content, m.tool_calls, m.tool_returns
  FROM w LEFT JOIN messages m ON ${IN_WINDOW} AND m.seq > (SELECT known FROM k)
  ORDER BY m.seq`;

/** The last transcript read of each agent, the least recently used dropped past `maxMessages` in all. */
export class TranscriptCache {
  private readonly byAgent = new Map<string, CachedTranscript>();
  private messages = 0;

  constructor(private readonly maxMessages: number) {}

  get(agentId: string): CachedTranscript | undefined {
    const cached = this.byAgent.get(agentId);
    if (cached) {
      this.byAgent.delete(agentId);
      this.byAgent.set(agentId, cached);
    }
    return cached;
  }

  set(agentId: string, transcript: CachedTranscript): void {
    this.drop(agentId);
    if (transcript.rows.length > this.maxMessages) return;
    this.byAgent.set(agentId, transcript);
    this.messages += transcript.rows.length;
    for (const [oldest] of this.byAgent) {
      if (this.messages <= this.maxMessages) break;
      this.drop(oldest);
    }
  }

  private drop(agentId: string): void {
    this.messages -= this.byAgent.get(agentId)?.rows.length ?? 0;
    this.byAgent.delete(agentId);
  }
}

const fieldsOf = ({ role, content, tool_calls, tool_returns }: Row): TranscriptRow => ({
  role,
  content,
  tool_calls,
  tool_returns,
});

/** The transcript of the call of `runId` by `agentId`: the cached messages, and those after them. */
export async function readTranscript(
  db: Queryable,
  cache: TranscriptCache,
  key: { agentId: string; runId: string },
): Promise<TranscriptRow[]> {
  const cached = cache.get(key.agentId);
  const read = (known: number) =>
    db.query<Row>(TRANSCRIPT, [key.runId, known, cached?.conversationId ?? null, cached?.startSeq ?? -1]);
  let rows = await read(cached?.lastSeq ?? -1);
  if (!rows.length) return [];
  const kept = rows[0].known >= 0 && (rows[0].known_seqs ?? '') === cached!.seqs;
  if (rows[0].known >= 0 && !kept) rows = await read(-1);
  const newer = rows.filter((row) => row.seq !== null);
  const seqs = [...(kept ? [cached!.seqs] : []), ...newer.map((row) => String(row.seq))];
  const transcript = [...(kept ? cached!.rows : []), ...newer.map(fieldsOf)];
  cache.set(key.agentId, {
    conversationId: rows[0].window_conversation,
    startSeq: rows[0].window_start,
    seqs: seqs.filter(Boolean).join(','),
    lastSeq: newer.at(-1)?.seq ?? (kept ? cached!.lastSeq : -1),
    rows: transcript,
  });
  return transcript;
}
