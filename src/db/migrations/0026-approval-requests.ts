import type { Migration } from './migration';

/**
 * Every pause for approval, kept apart from the messages (a reset of the agent's messages keeps it):
 * what was asked (the waiting calls, their arguments, the agent's memory as it was) and, once answered,
 * who answered, when, and what they decided for each call. The pending ones are the approval inbox
 * (GET /v1/approvals); each change is announced on `letta_approval_events` for the page's live list.
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

    CREATE TABLE approval_link_uses (
      link_id text PRIMARY KEY,
      used_at timestamptz NOT NULL DEFAULT now()
    );
  `,
};
