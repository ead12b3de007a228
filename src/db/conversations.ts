import type { Queryable } from './database';
import type { ConversationRow } from './rows';
import { json, pageByCreatedAt, updateById, whereClause, type Page } from './sql';

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
  conversation: Pick<ConversationRow, 'id' | 'agent_id'> & ConversationFields,
): Promise<ConversationRow> {
  const [row] = await db.query<ConversationRow>(
    `INSERT INTO conversations (id, agent_id, summary, model, model_settings)
     VALUES ($1, $2, $3, $4, $5) RETURNING *`,
    [
      conversation.id,
      conversation.agent_id,
      conversation.summary,
      conversation.model,
      json(conversation.model_settings),
    ],
  );
  return row;
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
  if (filters.agentId) where.add('agent_id = ?', filters.agentId);
  if (filters.summarySearch) where.add("strpos(coalesce(summary, ''), ?) > 0", filters.summarySearch);
  const tail = pageByCreatedAt(where, 'conversations', page);
  return db.query<ConversationRow>(`SELECT * FROM conversations ${where} ${tail}`, where.params);
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
