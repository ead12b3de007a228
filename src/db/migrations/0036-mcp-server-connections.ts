import type { Migration } from './migration';

/**
 * An MCP server's connection as last tried: `connection_status` `pending` (not tried with its config
 * yet), `connected` (its tools listed) or `failed` (`last_error` says why), `last_tried_at` when.
 * A server is stored before it is connected to, so a config that does not work yet is kept.
 * `config_version` counts its config's changes: what was learnt with an older config is not recorded
 * for a newer one. Servers stored before were connected to first.
 */
export const mcpServerConnections: Migration = {
  version: 36,
  name: 'MCP server connections',
  sql: `
    ALTER TABLE mcp_servers
      ADD COLUMN config_version integer NOT NULL DEFAULT 1,
      ADD COLUMN connection_status text NOT NULL DEFAULT 'connected'
        CHECK (connection_status IN ('pending', 'connected', 'failed')),
      ADD COLUMN last_error text,
      ADD COLUMN last_tried_at timestamptz;
  `,
};
