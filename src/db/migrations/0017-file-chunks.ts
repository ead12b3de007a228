import type { Migration } from './migration';

/**
 * A file's chunks between its parsing and their embedding (workflows/file-ingestion.ts): the parse
 * activity stores them once, each embedding batch reads its slice, and the chunks go once the file's
 * passages are all stored. The workflow's history carries only their count.
 */
export const fileChunks: Migration = {
  version: 17,
  name: 'file chunks',
  sql: `
    CREATE TABLE file_chunks (
      file_id text NOT NULL REFERENCES files(id) ON DELETE CASCADE,
      chunk_index integer NOT NULL,
      text text NOT NULL,
      PRIMARY KEY (file_id, chunk_index)
    );
  `,
};
