import type { Migration } from './migration';

/**
 * A version per change of a tool: a turn that started with a tool keeps running that version even if
 * the tool is updated meanwhile (the activity loads the version the turn resolved at its start).
 */
export const toolVersions: Migration = {
  version: 4,
  name: 'tool versions',
  sql: `
    ALTER TABLE tools ADD COLUMN version integer NOT NULL DEFAULT 1;
    CREATE TABLE tool_versions (
      tool_id text NOT NULL REFERENCES tools(id) ON DELETE CASCADE,
      version integer NOT NULL,
      tool jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tool_id, version)
    );
    INSERT INTO tool_versions (tool_id, version, tool) SELECT id, version, to_jsonb(tools) FROM tools;
  `,
};
