import type { Migration } from './migration';

/**
 * A request's messages wait with its run until the agent's session starts their turn: stored in
 * the transcript then, at the turn's start, so that turns queued behind another never slip their
 * messages into its history.
 */
export const queuedInput: Migration = {
  version: 8,
  name: 'queued input',
  sql: `ALTER TABLE runs ADD COLUMN input jsonb;`,
};
