import type { Migration } from './migration';

/**
 * A tool's return as Letta's return parts, when it holds an image (src/returns/return-parts.ts):
 * `func_return` stays its text form, which tool rules, search and text-only models read.
 */
export const toolReturnParts: Migration = {
  version: 32,
  name: 'tool return parts',
  sql: `ALTER TABLE tool_executions ADD COLUMN func_return_parts jsonb;`,
};
