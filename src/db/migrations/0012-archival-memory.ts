import type { Migration } from './migration';

/**
 * Archival memory, as Letta keeps it: archives of passages, attached to agents (an agent's own archive
 * is made on its first insert). Embeddings are pgvector's `vector` where the server has the extension
 * (PGlite ships it, src/db/database.ts loads it), else a plain `real[]` searched exactly in SQL
 * (src/db/archives.ts); unit length either way, so cosine similarity is their dot product.
 */
export const archivalMemory: Migration = {
  version: 12,
  name: 'archival memory',
  sql: `
    CREATE TABLE archives (
      id text PRIMARY KEY,
      name text NOT NULL,
      description text,
      embedding_config jsonb,
      metadata jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE archives_agents (
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      archive_id text NOT NULL REFERENCES archives(id) ON DELETE CASCADE,
      -- The archive the agent's own inserts go to.
      is_owner boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (agent_id, archive_id)
    );
    CREATE INDEX archives_agents_archive ON archives_agents (archive_id);

    CREATE TABLE archival_passages (
      id text PRIMARY KEY,
      archive_id text NOT NULL REFERENCES archives(id) ON DELETE CASCADE,
      text text NOT NULL,
      tags text[] NOT NULL DEFAULT '{}',
      embedding_config jsonb,
      metadata jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX archival_passages_archive ON archival_passages (archive_id, created_at);

    DO $$
    BEGIN
      BEGIN
        CREATE EXTENSION IF NOT EXISTS vector;
        ALTER TABLE archival_passages ADD COLUMN embedding vector;
      EXCEPTION WHEN undefined_file OR insufficient_privilege OR feature_not_supported THEN
        ALTER TABLE archival_passages ADD COLUMN embedding real[];
      END;
    END $$;
  `,
};
