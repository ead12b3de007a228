import type { Migration } from './migration';

/**
 * Completion callbacks (Letta's `callback_url` on a run): where to POST the run once it ends, and how
 * the delivery went, as Letta's run shape reports it.
 */
export const runCallbacks: Migration = {
  version: 18,
  name: 'run callbacks',
  sql: `
    ALTER TABLE runs
      ADD COLUMN callback_url text,
      ADD COLUMN callback_sent_at timestamptz,
      ADD COLUMN callback_status_code integer,
      ADD COLUMN callback_error text;
  `,
};
