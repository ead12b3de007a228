import type { Migration } from './migration';

/**
 * Letta's per-agent file controls: how many files of its folders an agent keeps open at once, and
 * how many characters of each open file its context shows. Null: Letta's defaults for the agent's
 * context window (src/memory/file-views.ts).
 */
export const agentFileLimits: Migration = {
  version: 16,
  name: 'agent file limits',
  sql: `
    ALTER TABLE agents ADD COLUMN max_files_open integer, ADD COLUMN per_file_view_window_char_limit integer;
  `,
};
