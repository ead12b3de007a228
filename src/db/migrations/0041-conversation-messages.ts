import type { Migration } from './migration';

/**
 * Each conversation's messages in order, the agent's own history (no conversation) included: a turn's
 * transcript and a conversation's listing read that conversation's messages alone (inConversation in
 * src/db/messages.ts), not every message of an agent with many conversations.
 */
export const conversationMessages: Migration = {
  version: 41,
  name: 'conversation messages',
  sql: `
    CREATE INDEX messages_in_conversation ON messages (agent_id, coalesce(conversation_id, ''), seq);
  `,
};
