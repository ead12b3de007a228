import type { Migration } from './migration';

/**
 * Each conversation's messages in order, the agent's own history (no conversation) included: a turn's
 * transcript, a conversation's listing and the history invariant's check of each new message read that
 * conversation's messages alone (inConversation in src/db/messages.ts), not every message of an agent
 * with many conversations.
 */
export const conversationMessages: Migration = {
  version: 41,
  name: 'conversation messages',
  sql: `
    CREATE INDEX messages_in_conversation ON messages (agent_id, coalesce(conversation_id, ''), seq);

    -- The history invariant of migration 0010, checked against the message before in the conversation
    -- as that index finds it.
    CREATE OR REPLACE FUNCTION check_tool_call_pairing() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      previous messages%ROWTYPE;
      waiting jsonb;
    BEGIN
      SELECT * INTO previous FROM messages
        WHERE agent_id = NEW.agent_id AND coalesce(conversation_id, '') = coalesce(NEW.conversation_id, '')
          AND seq < NEW.seq ORDER BY seq DESC LIMIT 1;
      IF previous.role = 'approval' THEN
        SELECT tool_calls INTO waiting FROM messages
          WHERE agent_id = NEW.agent_id AND coalesce(conversation_id, '') = coalesce(NEW.conversation_id, '')
            AND seq < previous.seq ORDER BY seq DESC LIMIT 1;
      ELSIF previous.role = 'assistant' THEN
        waiting := previous.tool_calls;
      END IF;
      IF jsonb_array_length(coalesce(waiting, '[]')) = 0 THEN waiting := NULL; END IF;

      IF NEW.role = 'tool' THEN
        IF waiting IS NULL OR tool_call_ids(NEW.tool_returns, 'tool_call_id') <> tool_call_ids(waiting, 'id') THEN
          RAISE EXCEPTION 'history invariant: tool message % does not return exactly the calls before it', NEW.id;
        END IF;
      ELSIF NEW.role = 'approval' THEN
        IF waiting IS NULL OR previous.role <> 'assistant' THEN
          RAISE EXCEPTION 'history invariant: approval % answers no waiting tool call', NEW.id;
        END IF;
      ELSIF waiting IS NOT NULL THEN
        RAISE EXCEPTION 'history invariant: % message % would come before the results of the tool calls before it',
          NEW.role, NEW.id;
      END IF;
      RETURN NULL;
    END
    $$;
  `,
};
