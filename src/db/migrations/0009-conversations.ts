import type { Migration } from './migration';

/**
 * Conversations (Letta's): message histories of one agent, each with its own order of turns, all
 * sharing the agent's memory blocks. A message belongs to the conversation of its run (set as it is
 * stored, whoever stores it); one without a conversation is in the agent's default conversation. Each
 * keeps its own pending approval and context window (the default one on the agent's row).
 */
export const conversations: Migration = {
  version: 9,
  name: 'conversations',
  sql: `
    CREATE TABLE conversations (
      id text PRIMARY KEY,
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      summary text,
      model text,
      model_settings jsonb,
      last_message_at timestamptz,
      -- The approval this conversation's paused turn waits for (the agent's own history keeps its
      -- in agents.pending_approval).
      pending_approval jsonb,
      -- The model's context: messages from this seq on, after a summary of those before (compaction).
      context_start_seq bigint NOT NULL DEFAULT 0,
      context_summary text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX conversations_agent ON conversations (agent_id, created_at);

    ALTER TABLE agents ADD COLUMN context_start_seq bigint NOT NULL DEFAULT 0, ADD COLUMN context_summary text;

    ALTER TABLE runs ADD COLUMN conversation_id text REFERENCES conversations(id) ON DELETE CASCADE;
    ALTER TABLE messages ADD COLUMN conversation_id text REFERENCES conversations(id) ON DELETE CASCADE;
    CREATE INDEX messages_conversation ON messages (conversation_id, seq) WHERE conversation_id IS NOT NULL;

    CREATE FUNCTION message_conversation() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.run_id IS NOT NULL AND NEW.conversation_id IS NULL THEN
        SELECT conversation_id INTO NEW.conversation_id FROM runs WHERE id = NEW.run_id;
      END IF;
      RETURN NEW;
    END
    $$;
    CREATE TRIGGER messages_conversation BEFORE INSERT ON messages
      FOR EACH ROW EXECUTE FUNCTION message_conversation();
  `,
};
