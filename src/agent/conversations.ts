/** Conversations beyond their rows: Letta's fork of one (conversation_manager.py fork_conversation). */
import type { Database } from '../db';
import { getConversation, insertConversation, type ConversationRef } from '../db/conversations';
import { conversationContext, copyMessages, setContextWindow } from '../db/messages';
import type { ConversationRow, MessageRow } from '../db/rows';
import { notFound } from '../errors';
import { newId } from '../ids';

export interface ForkOptions {
  /** The last message the fork takes (with the results of its calls); none: all of the context. */
  messageId?: string;
  /** Left out of listings. */
  hidden?: boolean;
}

/**
 * A new conversation of the same agent whose context starts as the source's does: the summary of what
 * a compaction took out of it, then copies of the messages since, under ids of their own (a message
 * belongs to one conversation). No system message is copied: the system prompt is compiled afresh at
 * every step, from the agent's blocks as they are then. A conversation's model settings go with it.
 */
export async function forkConversation(
  db: Database,
  source: ConversationRef,
  options: ForkOptions = {},
): Promise<{ conversation: ConversationRow; messageIds: string[] }> {
  return db.transaction(async (tx) => {
    const from = source.conversationId ? await getConversation(tx, source.conversationId) : undefined;
    const { summary, transcript } = await conversationContext(tx, source);
    const what = source.conversationId ? `conversation ${source.conversationId}` : `agent ${source.agentId}`;
    const messages = forkedMessages(
      transcript.filter((m) => m.role !== 'system'),
      options.messageId,
      what,
    );
    const conversation = await insertConversation(tx, {
      id: newId('conv'),
      agent_id: source.agentId,
      summary: null,
      model: from?.model ?? null,
      model_settings: from?.model_settings ?? null,
      hidden: options.hidden ?? false,
    });
    const fork = { agentId: source.agentId, conversationId: conversation.id };
    if (summary) await setContextWindow(tx, fork, 0, summary);
    const messageIds = await copyMessages(
      tx,
      messages.map((m) => m.id),
      conversation.id,
    );
    return { conversation, messageIds };
  });
}

/**
 * The messages a fork takes: those through `messageId`, and the results of its calls with it; never a
 * call still waiting for its result (a paused or running turn's), which would leave the fork's history
 * without the result every call is followed by (docs/design.md, "the history invariant").
 */
function forkedMessages(messages: MessageRow[], messageId: string | undefined, what: string): MessageRow[] {
  let end = messages.length;
  if (messageId) {
    const at = messages.findIndex((m) => m.id === messageId);
    if (at < 0) throw notFound(`Message ${messageId} in the context of ${what}`);
    end = at + 1;
    while (end < messages.length && ['approval', 'tool'].includes(messages[end].role)) end++;
  }
  const waiting = (m: MessageRow) =>
    m.role === 'approval' || (m.role === 'assistant' && !!m.tool_calls?.length);
  while (end > 0 && waiting(messages[end - 1])) end--;
  return messages.slice(0, end);
}
