import type { Migration } from './migration';

/**
 * An MCP server's OAuth state per identity (src/mcp/oauth.ts, `oauth.per_identity`): a row per server
 * and identity, the identity '' being the server's own (the one that lists its tools, and every call
 * of a server that does not authorize per identity).
 */
export const mcpOauthIdentities: Migration = {
  version: 30,
  name: 'mcp oauth identities',
  sql: `
    ALTER TABLE mcp_oauth ADD COLUMN identity_id text NOT NULL DEFAULT '';
    ALTER TABLE mcp_oauth DROP CONSTRAINT mcp_oauth_pkey;
    ALTER TABLE mcp_oauth ADD PRIMARY KEY (server_id, identity_id);
  `,
};
