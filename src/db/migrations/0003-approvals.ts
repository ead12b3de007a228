import type { Migration } from './migration';

/**
 * Durable pauses: what an agent waits on (the paused workflow, the approval request message, the tool
 * calls, since and until when), and an optional per-agent approval timeout.
 */
export const approvals: Migration = {
  version: 3,
  name: 'pending approvals',
  sql: `
    ALTER TABLE agents ADD COLUMN pending_approval jsonb;
    ALTER TABLE agents ADD COLUMN approval_timeout_seconds integer;
  `,
};
