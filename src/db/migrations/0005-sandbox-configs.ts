import type { Migration } from './migration';

/**
 * Sandbox configs (one per type: Letta keeps a single config of each type and updates it in place) and
 * their environment variables, whose values are stored encrypted (src/secrets.ts).
 */
export const sandboxConfigs: Migration = {
  version: 5,
  name: 'sandbox configs and their environment variables',
  sql: `
    CREATE TABLE sandbox_configs (
      id text PRIMARY KEY,
      type text NOT NULL UNIQUE,
      config jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE sandbox_env_vars (
      id text PRIMARY KEY,
      sandbox_config_id text NOT NULL REFERENCES sandbox_configs(id) ON DELETE CASCADE,
      key text NOT NULL,
      value text NOT NULL,
      description text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (sandbox_config_id, key)
    );
  `,
};
