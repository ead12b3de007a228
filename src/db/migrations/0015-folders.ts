import type { Migration } from './migration';

/**
 * Letta's folders (once "sources") and their files. A file's bytes are kept until its ingestion
 * (workflows/file-ingestion.ts) has parsed them into `content`; its chunks are passages of the
 * folder's own archive (archival_passages, with the file and the chunk's place), so they are embedded,
 * stored and searched as archival memory is, and go with the file. `files_agents` is what an agent
 * of an attached folder sees of each file: open or closed, and the lines in view.
 */
export const folders: Migration = {
  version: 15,
  name: 'folders',
  sql: `
    CREATE TABLE folders (
      id text PRIMARY KEY,
      name text NOT NULL UNIQUE,
      description text,
      instructions text,
      embedding_config jsonb NOT NULL,
      embedding_chunk_size integer,
      metadata jsonb,
      -- The archive the files' chunks are passages of: never attached to an agent as archival memory.
      archive_id text NOT NULL REFERENCES archives(id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE files (
      id text PRIMARY KEY,
      folder_id text NOT NULL REFERENCES folders(id) ON DELETE CASCADE,
      file_name text NOT NULL,
      original_file_name text NOT NULL,
      file_type text,
      file_size bigint,
      processing_status text NOT NULL DEFAULT 'pending',
      error_message text,
      total_chunks integer,
      chunks_embedded integer,
      -- The upload, until ingestion has parsed it.
      data bytea,
      content text,
      workflow_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (folder_id, file_name)
    );

    CREATE TABLE agents_folders (
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      folder_id text NOT NULL REFERENCES folders(id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (agent_id, folder_id)
    );
    CREATE INDEX agents_folders_folder ON agents_folders (folder_id);

    CREATE TABLE files_agents (
      id text PRIMARY KEY,
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      file_id text NOT NULL REFERENCES files(id) ON DELETE CASCADE,
      folder_id text NOT NULL REFERENCES folders(id) ON DELETE CASCADE,
      file_name text NOT NULL,
      is_open boolean NOT NULL DEFAULT false,
      visible_content text,
      start_line integer,
      end_line integer,
      last_accessed_at timestamptz NOT NULL DEFAULT now(),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (agent_id, file_id)
    );
    CREATE INDEX files_agents_file ON files_agents (file_id);

    ALTER TABLE archival_passages
      ADD COLUMN file_id text REFERENCES files(id) ON DELETE CASCADE,
      ADD COLUMN chunk_index integer;
    -- A retried embedding batch finds its chunks stored: one passage per chunk, whatever happens.
    CREATE UNIQUE INDEX archival_passages_file_chunk ON archival_passages (file_id, chunk_index)
      WHERE file_id IS NOT NULL;
  `,
};
