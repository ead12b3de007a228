import type { Migration } from './migration';

/**
 * The approval inbox reads its page of waiting requests in its own order, (requested_at,
 * request_message_id), from an index of the waiting ones alone, and one agent's (a scoped token, the
 * `agent_id` filter) from an index of theirs: a page reads about as many rows as it shows, however
 * many pauses wait.
 */
export const waitingApprovalsOrder: Migration = {
  version: 38,
  name: 'waiting approvals order',
  sql: `
    DROP INDEX approval_requests_waiting;
    CREATE INDEX approval_requests_waiting ON approval_requests (requested_at, request_message_id)
      WHERE answered_at IS NULL;
    CREATE INDEX approval_requests_waiting_agents
      ON approval_requests (agent_id, requested_at, request_message_id) WHERE answered_at IS NULL;
  `,
};
