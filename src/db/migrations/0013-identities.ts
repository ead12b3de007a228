import type { Migration } from './migration';

/** Letta's identities: who an agent (or a block) belongs to, by the caller's own key. */
export const identities: Migration = {
  version: 13,
  name: 'identities',
  sql: `
    CREATE TABLE identities (
      id text PRIMARY KEY,
      identifier_key text NOT NULL UNIQUE,
      name text NOT NULL,
      identity_type text NOT NULL,
      project_id text,
      properties jsonb NOT NULL DEFAULT '[]',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE identities_agents (
      identity_id text NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      PRIMARY KEY (identity_id, agent_id)
    );
    CREATE INDEX identities_agents_agent ON identities_agents (agent_id);

    CREATE TABLE identities_blocks (
      identity_id text NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
      block_id text NOT NULL REFERENCES blocks(id) ON DELETE CASCADE,
      PRIMARY KEY (identity_id, block_id)
    );
  `,
};
