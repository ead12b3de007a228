import type { Migration } from './migration';

/**
 * Every pause for approval, kept apart from the messages (a reset of the agent's messages keeps it):
 * what was asked (the waiting calls, their arguments, the agent's memory as it was) and, once answered,
 * who answered, when, and what they decided for each call. The pending ones are the approval inbox
 * (GET /v1/approvals); each change is announced on `letta_approval_events` for the page's live list.
 * Pauses already waiting when it runs (they can wait for weeks) are recorded from what they kept.
 */
export const approvalRequests: Migration = {
  version: 26,
  name: 'approval requests',
  sql: `
    CREATE TABLE approval_requests (
      request_message_id text PRIMARY KEY,
      agent_id text NOT NULL,
      conversation_id text,
      run_id text NOT NULL,
      workflow_id text NOT NULL,
      requested_at timestamptz NOT NULL,
      expires_at timestamptz,
      blocks jsonb NOT NULL DEFAULT '[]',
      answer_run_id text,
      answered_at timestamptz,
      answered_by jsonb,
      outcome text
    );
    CREATE INDEX approval_requests_waiting ON approval_requests (requested_at DESC)
      WHERE answered_at IS NULL;
    CREATE INDEX approval_requests_runs ON approval_requests (run_id);
    CREATE INDEX approval_requests_answer_runs ON approval_requests (answer_run_id);

    CREATE TABLE approval_calls (
      tool_call_id text PRIMARY KEY,
      request_message_id text NOT NULL REFERENCES approval_requests ON DELETE CASCADE,
      position integer NOT NULL,
      tool_name text NOT NULL,
      arguments text NOT NULL,
      kind text NOT NULL,
      decision text,
      reason text,
      edited_arguments text
    );
    CREATE INDEX approval_calls_request ON approval_calls (request_message_id, position);

    CREATE FUNCTION notify_approval_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('letta_approval_events', NEW.request_message_id);
      RETURN NULL;
    END
    $$;
    CREATE TRIGGER approval_requests_changed AFTER INSERT OR UPDATE ON approval_requests
      FOR EACH ROW EXECUTE FUNCTION notify_approval_change();

    -- Pauses that began before this version: their calls from the request message (a client tool's
    -- by its run's client_tools), the memory as it is now (the nearest to as it was).
    INSERT INTO approval_requests (request_message_id, agent_id, conversation_id, run_id, workflow_id,
      requested_at, expires_at, blocks)
    SELECT p.pending->>'message_id', p.agent_id, p.conversation_id, p.pending->>'run_id',
      p.pending->>'workflow_id', (p.pending->>'requested_at')::timestamptz,
      (p.pending->>'expires_at')::timestamptz,
      (SELECT coalesce(jsonb_agg(jsonb_build_object('label', b.label, 'value', b.value)
         ORDER BY ab.position, b.created_at), '[]')
       FROM blocks b JOIN agent_blocks ab ON ab.block_id = b.id WHERE ab.agent_id = p.agent_id)
    FROM (SELECT id AS agent_id, NULL::text AS conversation_id, pending_approval AS pending FROM agents
          WHERE pending_approval IS NOT NULL
          UNION ALL
          SELECT agent_id, id, pending_approval FROM conversations WHERE pending_approval IS NOT NULL) p
    ON CONFLICT DO NOTHING;
    INSERT INTO approval_calls (tool_call_id, request_message_id, position, tool_name, arguments, kind)
    SELECT c->>'id', r.request_message_id, (ord - 1)::int, c->>'name', coalesce(c->>'arguments', '{}'),
      CASE WHEN EXISTS (SELECT 1 FROM runs run, jsonb_array_elements(run.request_config->'client_tools') t
                        WHERE run.id = r.run_id AND t->>'name' = c->>'name')
           THEN 'client_tool' ELSE 'approval' END
    FROM approval_requests r
    JOIN messages m ON m.id = r.request_message_id
    CROSS JOIN LATERAL jsonb_array_elements(m.tool_calls) WITH ORDINALITY AS t(c, ord)
    WHERE m.metadata->'approval_request'->'tool_call_ids' ? (c->>'id')
    ON CONFLICT DO NOTHING;

    CREATE TABLE approval_link_uses (
      link_id text PRIMARY KEY,
      used_at timestamptz NOT NULL DEFAULT now()
    );
  `,
};
