import type { Queryable } from './database';
import type { MessageRole, MessageRow, StoredToolReturn } from './rows';
import type { ToolCall } from '../llm/types';
import { json, keysetPage, whereClause, type Page } from './sql';
import { conversationHolder, type ConversationRef } from './conversations';

export interface NewMessage {
  id: string;
  agent_id: string;
  run_id: string | null;
  step_id?: string | null;
  role: MessageRole;
  content?: unknown;
  reasoning?: string | null;
  tool_calls?: ToolCall[] | null;
  tool_returns?: StoredToolReturn[] | null;
  approvals?: unknown[] | null;
  name?: string | null;
  otid?: string | null;
  sender_id?: string | null;
  metadata?: Record<string, unknown> | null;
  /** Set by activities: a retry that stores the same message again gets the first one back. */
  idempotency_key?: string | null;
  /** When it was written; unset: now (an imported history keeps its own times). */
  created_at?: Date | null;
}

/**
 * The text conversation_search looks through. It never looks at system messages, so theirs is left
 * out: the system prompt is kilobytes of text, and indexing it cost more than the rest of an agent's
 * creation in the database.
 */
function searchableText(message: NewMessage): string {
  if (message.role === 'system') return '';
  const parts: string[] = [];
  if (typeof message.content === 'string') parts.push(message.content);
  else if (Array.isArray(message.content)) {
    for (const part of message.content as { type?: string; text?: string }[])
      if (part?.text) parts.push(part.text);
  }
  for (const ret of message.tool_returns ?? []) parts.push(ret.func_response);
  return parts.join('\n');
}

export async function insertMessage(db: Queryable, message: NewMessage): Promise<MessageRow> {
  const [inserted] = await db.query<MessageRow>(
    `INSERT INTO messages (id, agent_id, run_id, step_id, role, content, reasoning, tool_calls, tool_returns,
       approvals, name, otid, sender_id, metadata, text_index, idempotency_key, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, coalesce($17, now()))
     ON CONFLICT (idempotency_key) DO NOTHING
     RETURNING *`,
    [
      message.id,
      message.agent_id,
      message.run_id,
      message.step_id ?? null,
      message.role,
      json(message.content),
      message.reasoning ?? null,
      json(message.tool_calls),
      json(message.tool_returns),
      json(message.approvals),
      message.name ?? null,
      message.otid ?? null,
      message.sender_id ?? null,
      json(message.metadata),
      searchableText(message),
      message.idempotency_key ?? null,
      message.created_at ?? null,
    ],
  );
  if (inserted) return inserted;
  return (await messageByKey(db, message.idempotency_key!))!;
}

/**
 * Makes a stored reply an approval request for the calls `request` names (a pause that begins after
 * the reply was stored: an MCP server's elicitation during one of its calls).
 */
export async function markApprovalRequest(
  q: Queryable,
  id: string,
  request: { tool_call_ids: string[]; [key: string]: unknown },
): Promise<void> {
  await q.query(
    `UPDATE messages SET metadata = coalesce(metadata, '{}') || jsonb_build_object('approval_request', $2::jsonb)
     WHERE id = $1`,
    [id, json(request)],
  );
}

/** The message stored under an idempotency key (by whichever attempt stored it first). */
export async function messageByKey(db: Queryable, key: string): Promise<MessageRow | undefined> {
  const [row] = await db.query<MessageRow>('SELECT * FROM messages WHERE idempotency_key = $1', [key]);
  return row;
}

/** The ids of an agent's messages, oldest first. */
export async function agentMessageIds(db: Queryable, agentId: string): Promise<string[]> {
  const rows = await db.query<{ id: string }>('SELECT id FROM messages WHERE agent_id = $1 ORDER BY seq', [
    agentId,
  ]);
  return rows.map((row) => row.id);
}

/**
 * The condition on messages `m` of the agent `agentId` in the conversation `conversationId` (SQL
 * expressions; a null conversation: the agent's own history) that the index of each conversation's
 * messages in order answers (migration 0041): the conversation's messages alone are read, whatever the
 * agent's other conversations hold.
 */
export const inConversation = (m: string, agentId: string, conversationId: string) =>
  `${m}.agent_id = ${agentId} AND coalesce(${m}.conversation_id, '') = coalesce(${conversationId}, '')`;

/** Every message of a conversation (null: the agent's own history), oldest first. */
export function conversationMessages(db: Queryable, ref: ConversationRef): Promise<MessageRow[]> {
  return db.query<MessageRow>(
    `SELECT * FROM messages m WHERE ${inConversation('m', '$1', '$2')} ORDER BY seq`,
    [ref.agentId, ref.conversationId],
  );
}

/** The latest reply of a run whose calls waited for an answer. */
export async function latestApprovalRequest(db: Queryable, runId: string): Promise<MessageRow | undefined> {
  const [row] = await db.query<MessageRow>(
    `SELECT * FROM messages WHERE run_id = $1 AND metadata ? 'approval_request' ORDER BY seq DESC LIMIT 1`,
    [runId],
  );
  return row;
}

/** The agent's latest recorded answer that names one of `ids` (a tool call's, or its request message's). */
export async function latestAnswerNaming(
  db: Queryable,
  agentId: string,
  ids: string[],
): Promise<MessageRow | undefined> {
  const [row] = await db.query<MessageRow>(
    `SELECT * FROM messages WHERE agent_id = $1 AND role = 'approval' AND (
       metadata->>'request_message_id' = ANY($2)
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(approvals) AS a WHERE a->>'tool_call_id' = ANY($2)))
     ORDER BY seq DESC LIMIT 1`,
    [agentId, ids],
  );
  return row;
}

/**
 * What of a conversation the model sees: the summary of what a compaction took out of its context, and
 * the messages since.
 */
export async function conversationContext(
  db: Queryable,
  ref: ConversationRef,
): Promise<{ summary: string | null; transcript: MessageRow[] }> {
  const { table, id } = conversationHolder(ref);
  const [window] = await db.query<ContextWindow>(
    `SELECT context_start_seq, context_summary FROM ${table} WHERE id = $1`,
    [id],
  );
  return { summary: window?.context_summary ?? null, transcript: await transcriptSince(db, ref, window) };
}

interface ContextWindow {
  context_start_seq: string;
  context_summary: string | null;
}

const transcriptSince = (db: Queryable, ref: ConversationRef, window: ContextWindow | undefined) =>
  db.query<MessageRow>(
    `SELECT * FROM messages m WHERE ${inConversation('m', '$1', '$2')} AND seq >= $3 ORDER BY seq`,
    [ref.agentId, ref.conversationId, window?.context_start_seq ?? 0],
  );

/** A compaction: the model's context starts at message `startSeq`, after `summary`. */
export async function setContextWindow(
  db: Queryable,
  ref: ConversationRef,
  startSeq: number,
  summary: string | null,
) {
  const { table, id } = conversationHolder(ref);
  await db.query(`UPDATE ${table} SET context_start_seq = $2, context_summary = $3 WHERE id = $1`, [
    id,
    startSeq,
    summary,
  ]);
}

/**
 * Copies messages, in their order, into another conversation of their agent under ids of their own
 * (a message belongs to one conversation); their times stay theirs. A copy belongs to no run or step:
 * those list their own messages once. Answers the copies' ids, in order.
 */
export async function copyMessages(db: Queryable, ids: string[], conversationId: string): Promise<string[]> {
  if (!ids.length) return [];
  const rows = await db.query<{ id: string; seq: string }>(
    `INSERT INTO messages (id, agent_id, conversation_id, role, content, reasoning, tool_calls, tool_returns,
       approvals, name, otid, sender_id, metadata, text_index, created_at)
     SELECT 'message-' || gen_random_uuid(), agent_id, $2, role, content, reasoning, tool_calls, tool_returns,
       approvals, name, otid, sender_id, metadata, text_index, created_at
     FROM messages WHERE id = ANY($1) ORDER BY seq
     RETURNING id, seq`,
    [ids, conversationId],
  );
  return rows.sort((a, b) => Number(a.seq) - Number(b.seq)).map((row) => row.id);
}

export function getMessage(db: Queryable, id: string): Promise<MessageRow | undefined> {
  return db.query<MessageRow>('SELECT * FROM messages WHERE id = $1', [id]).then((rows) => rows[0]);
}

/**
 * Whose messages: a run's, or an agent's (of one conversation when it names one, null the default),
 * or, with neither, every agent's (of one conversation when it names one).
 */
export type MessageScope = { agentId?: string; conversationId?: string | null } | { runId: string };

/**
 * One page of messages, in Letta's paging terms (src/db/sql.ts `keysetPage`), in the order they were
 * stored (`seq`). `scope` is the agent's messages (of one conversation, null the default, when it names
 * one) or the run's.
 */
export async function listMessages(
  db: Queryable,
  scope: MessageScope,
  page: Page,
  roles?: MessageRole[],
): Promise<MessageRow[]> {
  const where = whereClause();
  if ('runId' in scope) where.add('run_id = ?', scope.runId);
  else {
    if (scope.agentId) where.add('agent_id = ?', scope.agentId);
    if (scope.conversationId !== undefined)
      where.add('conversation_id IS NOT DISTINCT FROM ?', scope.conversationId);
  }
  if (roles?.length) where.add('role = ANY(?)', roles);
  return keysetPage<MessageRow>(db, 'SELECT * FROM messages', where, page, {
    key: 'seq',
    cursor: '(SELECT seq FROM messages WHERE id = ?)',
  });
}

/** Messages of a run stored after `afterSeq`, oldest first (what a stream has not sent yet). */
export function runMessagesAfter(db: Queryable, runId: string, afterSeq: number): Promise<MessageRow[]> {
  return db.query<MessageRow>('SELECT * FROM messages WHERE run_id = $1 AND seq > $2 ORDER BY seq', [
    runId,
    afterSeq,
  ]);
}

export interface SearchOptions {
  query?: string;
  roles?: MessageRole[];
  limit: number;
  startDate?: Date;
  endDate?: Date;
}

/**
 * PostgreSQL full-text search over messages (an agent's, or every agent's), best match first, newest
 * first among equals.
 */
export function searchMessages(
  db: Queryable,
  scope: { agentId?: string; conversationId?: string },
  options: SearchOptions,
): Promise<MessageRow[]> {
  const where = whereClause();
  if (scope.agentId) where.add('agent_id = ?', scope.agentId);
  if (scope.conversationId) where.add('conversation_id = ?', scope.conversationId);
  where.add("role <> 'system'");
  // A constant, not a bare 0: ORDER BY 0 would name a column by position.
  let rank = '0::real';
  if (options.query?.trim()) {
    const text = where.param(options.query);
    const query = `websearch_to_tsquery('english', ${text})`;
    where.add(
      `(to_tsvector('english', text_index) @@ ${query} OR strpos(lower(text_index), lower(${text})) > 0)`,
    );
    rank = `ts_rank(to_tsvector('english', text_index), ${query})`;
  }
  if (options.roles?.length) where.add('role = ANY(?)', options.roles);
  if (options.startDate) where.add('created_at >= ?', options.startDate);
  if (options.endDate) where.add('created_at <= ?', options.endDate);
  return db.query<MessageRow>(
    `SELECT * FROM messages ${where} ORDER BY ${rank} DESC, seq DESC LIMIT ${where.param(options.limit)}`,
    where.params,
  );
}

/**
 * The assistant message that made the tool call (the newest, should an id repeat), in the conversation
 * of the run `runId` that returns it: a turn's calls and returns share its conversation.
 */
export async function messageOfToolCall(
  db: Queryable,
  scope: { agentId: string; runId: string },
  toolCallId: string,
): Promise<MessageRow | undefined> {
  const [row] = await db.query<MessageRow>(
    `SELECT * FROM messages m
     WHERE ${inConversation('m', '$1', '(SELECT conversation_id FROM runs WHERE id = $3)')}
       AND role = 'assistant' AND tool_calls @> $2::jsonb
     ORDER BY seq DESC LIMIT 1`,
    [scope.agentId, JSON.stringify([{ id: toolCallId }]), scope.runId],
  );
  return row;
}

/**
 * Empties a conversation's history but its system message (Letta's reset-messages): the model's
 * context starts afresh, without a summary.
 */
export async function resetHistory(db: Queryable, ref: ConversationRef): Promise<void> {
  await db.query(`DELETE FROM messages m WHERE ${inConversation('m', '$1', '$2')} AND role <> 'system'`, [
    ref.agentId,
    ref.conversationId,
  ]);
  await setContextWindow(db, ref, 0, null);
}
