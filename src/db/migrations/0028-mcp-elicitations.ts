import type { Migration } from './migration';

/**
 * An MCP server's elicitation during a tool call, kept while the turn is paused for it: what the
 * server asked, how to come back to the call (its streamable HTTP session and the resumption token
 * before the request), and the answer once given. A pause's calls note the elicitation they show.
 * As `json`, not `jsonb`: the requested schema keeps its fields in the server's order (a form's
 * order), and an answer's content the order it was given in.
 */
export const mcpElicitations: Migration = {
  version: 28,
  name: 'mcp elicitations',
  sql: `
    CREATE TABLE mcp_elicitations (
      tool_call_id text PRIMARY KEY,
      server_id text NOT NULL,
      params json NOT NULL,
      session_id text,
      resumption_token text,
      answer json,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    ALTER TABLE approval_calls ADD COLUMN elicitation json;
  `,
};
