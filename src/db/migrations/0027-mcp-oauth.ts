import type { Migration } from './migration';

/**
 * What an OAuth-protected MCP server's client keeps (src/mcp/oauth.ts), one row per server: its client
 * registration, tokens and PKCE verifier encrypted (src/secrets.ts), the discovered metadata, and the
 * pending authorization's state (as a digest: the callback looks it up, and uses it once) with the
 * authorization URL a user is sent to. No foreign key: a registration writes here before its server's
 * row exists; deleting the server deletes its row (src/db/mcp-servers.ts).
 */
export const mcpOauth: Migration = {
  version: 27,
  name: 'mcp oauth',
  sql: `
    CREATE TABLE mcp_oauth (
      server_id text PRIMARY KEY,
      client_information text,
      tokens text,
      tokens_expire_at timestamptz,
      discovery jsonb,
      code_verifier text,
      state_digest text UNIQUE,
      state_expires_at timestamptz,
      authorization_url text,
      updated_at timestamptz NOT NULL DEFAULT now()
    );
  `,
};
