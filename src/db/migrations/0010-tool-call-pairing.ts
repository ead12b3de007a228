import type { Migration } from './migration';

/**
 * The history invariant, kept by the database whoever writes, in each conversation: an assistant message with tool calls is
 * followed by exactly its tool results (one tool message returning each of its calls) before anything
 * else; an approval's record may stand between, as answers arrive that way. A provider refuses a history
 * that breaks it, and the agent could not be talked to again. Checked after each insert against the
 * agent's message before it (a retried insert that finds its row inserts nothing, and is not checked).
 *
 * Agents whose history ended on unanswered calls (turns of two requests ran at once before each agent's
 * turns were ordered) get the missing results now, as errors, unless they wait for approval or run.
 */
export const toolCallPairing: Migration = {
  version: 10,
  name: 'tool call pairing',
  sql: `
    CREATE FUNCTION tool_call_ids(calls jsonb, key text) RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
      SELECT coalesce(array_agg(c->>key ORDER BY c->>key), '{}') FROM jsonb_array_elements(coalesce(calls, '[]')) AS c
    $$;

    CREATE FUNCTION check_tool_call_pairing() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      previous messages%ROWTYPE;
      waiting jsonb;
    BEGIN
      SELECT * INTO previous FROM messages
        WHERE agent_id = NEW.agent_id AND conversation_id IS NOT DISTINCT FROM NEW.conversation_id
          AND seq < NEW.seq ORDER BY seq DESC LIMIT 1;
      IF previous.role = 'approval' THEN
        SELECT tool_calls INTO waiting FROM messages
          WHERE agent_id = NEW.agent_id AND conversation_id IS NOT DISTINCT FROM NEW.conversation_id
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

    INSERT INTO messages (id, agent_id, run_id, role, tool_returns)
    SELECT 'message-' || gen_random_uuid(), m.agent_id, m.run_id, 'tool',
           (SELECT jsonb_agg(jsonb_build_object(
                     'tool_call_id', c->>'id', 'status', 'error', 'stdout', NULL, 'stderr', NULL,
                     'func_response', jsonb_build_object(
                       'status', 'Failed',
                       'message', 'Error executing function ' || (c->>'name') || ': the call did not complete',
                       'time', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH12:MI:SS AM UTC+0000'))::text))
              FROM jsonb_array_elements(m.tool_calls) AS c)
    FROM messages m JOIN agents a ON a.id = m.agent_id
    WHERE m.role = 'assistant' AND jsonb_array_length(coalesce(m.tool_calls, '[]')) > 0
      AND m.seq = (SELECT max(seq) FROM messages WHERE agent_id = m.agent_id)
      AND (a.pending_approval IS NULL OR a.pending_approval->>'message_id' <> m.id)
      AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.agent_id = m.agent_id AND r.status IN ('created', 'running'));

    CREATE TRIGGER messages_tool_call_pairing AFTER INSERT ON messages
      FOR EACH ROW EXECUTE FUNCTION check_tool_call_pairing();
  `,
};
