import type { Migration } from './migration';

/**
 * A request's messages wait with its run until the agent's session gives the step its turn: stored in
 * the transcript then, at the step's start, so that steps queued behind another never slip their
 * messages into its history.
 */
export const queuedInput: Migration = {
  version: 8,
  name: 'queued input',
  sql: `ALTER TABLE runs ADD COLUMN input jsonb;`,
};
