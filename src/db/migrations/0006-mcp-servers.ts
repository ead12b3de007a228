import type { Migration } from './migration';

/**
 * Registered MCP servers. `config` holds the fields that carry no credentials; `secrets` the others
 * (stdio env, auth token, custom headers) as one encrypted JSON object (src/secrets.ts). A server's tools
 * are rows of `tools` whose metadata names the server; they go when it goes.
 */
export const mcpServers: Migration = {
  version: 6,
  name: 'MCP servers',
  sql: `
    CREATE TABLE mcp_servers (
      id text PRIMARY KEY,
      server_name text NOT NULL UNIQUE,
      mcp_server_type text NOT NULL,
      config jsonb NOT NULL,
      secrets text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE INDEX tools_mcp_server ON tools ((metadata -> 'mcp' ->> 'server_id'));
  `,
};
