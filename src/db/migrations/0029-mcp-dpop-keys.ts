import type { Migration } from './migration';

/**
 * The DPoP key pair of an OAuth-protected MCP server's client (src/mcp/dpop.ts), one per server, as a
 * private JWK encrypted at rest (src/secrets.ts): tokens bound to it keep working after a restart. A
 * table of its own, since a server's tokens may be many (per identity) while its key is one. No
 * foreign key, as for mcp_oauth: deleting the server deletes its key (src/db/mcp-oauth.ts).
 */
export const mcpDpopKeys: Migration = {
  version: 29,
  name: 'mcp dpop keys',
  sql: `
    CREATE TABLE mcp_dpop_keys (
      server_id text PRIMARY KEY,
      private_jwk text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
  `,
};
