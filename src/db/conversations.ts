import type { Queryable } from './database';
import type { ConversationRow, PendingApproval, RunRow } from './rows';
import { json, pageOf, updateById, whereClause, type Page } from './sql';

/** One of an agent's conversations; null: the agent's own history (Letta's `default`). */
export interface ConversationRef {
  agentId: string;
  conversationId: string | null;
}

/**
 * The row that keeps a conversation's state (its pending approval, its context window): the
 * conversation's own, or the agent's for its own history. Table names come from here, never a request.
 */
export const conversationHolder = (ref: ConversationRef) =>
  ref.conversationId
    ? { table: 'conversations', id: ref.conversationId }
    : { table: 'agents', id: ref.agentId };

export type ConversationFields = Pick<ConversationRow, 'summary' | 'model' | 'model_settings'>;

export async function insertConversation(
  db: Queryable,
  conversation: Pick<ConversationRow, 'id' | 'agent_id' | 'hidden'> & ConversationFields,
): Promise<ConversationRow> {
  const [row] = await db.query<ConversationRow>(
    `INSERT INTO conversations (id, agent_id, summary, model, model_settings, hidden)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
    [
      conversation.id,
      conversation.agent_id,
      conversation.summary,
      conversation.model,
      json(conversation.model_settings),
      conversation.hidden,
    ],
  );
  return row;
}

/**
 * The agent whose default conversation a conversation route's id names: `default` with the agent's id
 * given apart (`agent_id`), or, as Letta still takes it, the agent's id alone; none for a
 * conversation's own id (or `default` without an agent).
 */
export function agentOfDefaultConversation(id: string, agentId: unknown): string | undefined {
  if (id === 'default') return typeof agentId === 'string' && agentId ? agentId : undefined;
  return id.startsWith('agent-') ? id : undefined;
}

export function getConversation(db: Queryable, id: string): Promise<ConversationRow | undefined> {
  return db.query<ConversationRow>('SELECT * FROM conversations WHERE id = $1', [id]).then((rows) => rows[0]);
}

export interface ConversationFilters {
  agentId?: string;
  summarySearch?: string;
}

export function listConversations(
  db: Queryable,
  filters: ConversationFilters,
  page: Page,
): Promise<ConversationRow[]> {
  const where = whereClause();
  where.add('NOT hidden');
  if (filters.agentId) where.add('agent_id = ?', filters.agentId);
  if (filters.summarySearch) where.add("strpos(coalesce(summary, ''), ?) > 0", filters.summarySearch);
  return pageOf<ConversationRow>(db, 'conversations', where, page);
}

/** Sets the fields given (undefined: left as it is). */
export async function updateConversation(
  db: Queryable,
  id: string,
  fields: Partial<ConversationFields & Pick<ConversationRow, 'last_message_at'>>,
): Promise<ConversationRow | undefined> {
  await updateById(db, 'conversations', id, fields, ['model_settings']);
  return getConversation(db, id);
}

export async function deleteConversation(db: Queryable, id: string): Promise<boolean> {
  return (await db.query('DELETE FROM conversations WHERE id = $1 RETURNING id', [id])).length > 0;
}

/** The ids of a conversation's messages, oldest first (Letta's `in_context_message_ids`). */
export async function conversationMessageIds(db: Queryable, id: string): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    'SELECT id FROM messages WHERE conversation_id = $1 ORDER BY seq',
    [id],
  );
  return rows.map((row) => row.id);
}

/**
 * The pending approval of a conversation (each waits for its own: a message to another conversation
 * of the agent goes ahead); `lock`: its row locked until the transaction ends.
 */
export async function pendingApproval(
  q: Queryable,
  scope: ConversationRef,
  lock: 'lock' | 'read' = 'read',
): Promise<PendingApproval | null> {
  const { table, id } = conversationHolder(scope);
  const [row] = await q.query<{ pending_approval: PendingApproval | null }>(
    `SELECT pending_approval FROM ${table} WHERE id = $1 ${lock === 'lock' ? 'FOR NO KEY UPDATE' : ''}`,
    [id],
  );
  return row?.pending_approval ?? null;
}

export const lockPendingApproval = (tx: Queryable, scope: ConversationRef) =>
  pendingApproval(tx, scope, 'lock');

export async function setPendingApproval(
  q: Queryable,
  scope: ConversationRef,
  pending: PendingApproval | null,
) {
  const { table, id } = conversationHolder(scope);
  await q.query(`UPDATE ${table} SET pending_approval = $2 WHERE id = $1`, [id, json(pending)]);
}

/** The conversation a run's turn belongs to, while the run exists. */
export async function findRunScope(q: Queryable, runId: string): Promise<ConversationRef | undefined> {
  const [run] = await q.query<Pick<RunRow, 'agent_id' | 'conversation_id'>>(
    'SELECT agent_id, conversation_id FROM runs WHERE id = $1',
    [runId],
  );
  return run && { agentId: run.agent_id, conversationId: run.conversation_id };
}

export async function runScope(q: Queryable, runId: string): Promise<ConversationRef> {
  const scope = await findRunScope(q, runId);
  if (!scope) throw new Error(`run ${runId} does not exist`);
  return scope;
}
