import type { Migration } from './migration';

/**
 * What a long turn relies on to stay small and fast:
 *
 * - Large parts of requests stored once, by the SHA-256 of their JSON text (src/db/request-parts.ts): a
 *   request's client tool schemas, an agent's tools and rules as a turn works with them. Runs and
 *   workflow payloads name them by their digest. The text is kept as it was sent (jsonb would sort a
 *   schema's properties, the order the model sees its parameters in).
 * - A message's place and what the model reads of it never change once stored (only its metadata
 *   does): model calls keep the transcripts they read and read only what came since
 *   (src/db/transcripts.ts), which is right only while this holds, so the database holds it.
 */
export const requestParts: Migration = {
  version: 34,
  name: 'request parts, stored messages kept as the model read them',
  sql: `
    CREATE TABLE request_parts (
      digest text PRIMARY KEY,
      body text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE FUNCTION messages_keep_what_the_model_reads() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF (NEW.seq, NEW.agent_id, NEW.conversation_id, NEW.role, NEW.content, NEW.tool_calls, NEW.tool_returns)
         IS DISTINCT FROM (OLD.seq, OLD.agent_id, OLD.conversation_id, OLD.role, OLD.content, OLD.tool_calls, OLD.tool_returns)
      THEN
        RAISE EXCEPTION 'message %: only its metadata may change once stored', OLD.id;
      END IF;
      RETURN NEW;
    END
    $$;

    CREATE TRIGGER messages_keep_what_the_model_reads BEFORE UPDATE ON messages
      FOR EACH ROW EXECUTE FUNCTION messages_keep_what_the_model_reads();
  `,
};
