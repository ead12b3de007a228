import type { Migration } from './migration';

/**
 * Tool schemas keep their keys in the order they were given: `jsonb` sorts object keys, and a model
 * fills arguments in the order the schema lists them (a signature's order). `json` keeps the text.
 * Schemas stored before this keep the sorted order until they are stored again (the built-in tools
 * are, at every start).
 */
export const toolSchemaOrder: Migration = {
  version: 14,
  name: 'tool schema order',
  sql: `
    ALTER TABLE tools ALTER COLUMN json_schema TYPE json USING json_schema::json;
    ALTER TABLE tools ALTER COLUMN args_json_schema TYPE json USING args_json_schema::json;
    ALTER TABLE tool_versions ALTER COLUMN tool TYPE json USING tool::json;
  `,
};
