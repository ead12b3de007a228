import type { Migration } from './migration';

/**
 * A conversation's lane (src/db/lanes.ts): the workflow id of the one turn of it that may run, in the
 * row that keeps the conversation's state, and whether its session waits for it.
 */
export const lanes: Migration = {
  version: 20,
  name: 'lanes',
  sql: `
    ALTER TABLE agents ADD COLUMN lane_holder text, ADD COLUMN lane_waited boolean NOT NULL DEFAULT false;
    ALTER TABLE conversations ADD COLUMN lane_holder text, ADD COLUMN lane_waited boolean NOT NULL DEFAULT false;
  `,
};
