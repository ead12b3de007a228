import type { Migration } from './migration';

/**
 * A tool call's claim (src/db/tool-claims.ts): which attempt may run it, until when. Taken with the
 * call's read before any side effect, renewed while the tool runs, and closed (lease until infinity)
 * by the statement that records the result, so that no later attempt can take it again.
 */
export const toolCallClaims: Migration = {
  version: 22,
  name: 'tool call claims',
  sql: `
    CREATE TABLE tool_call_claims (
      tool_call_id text PRIMARY KEY,
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      owner text NOT NULL,
      lease_until timestamptz NOT NULL
    );
    CREATE INDEX tool_call_claims_agent ON tool_call_claims (agent_id);
  `,
};
