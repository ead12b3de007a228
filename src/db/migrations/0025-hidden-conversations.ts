import type { Migration } from './migration';

/** Conversations made `hidden` (a fork's or a new one's, as Letta's clients ask) are left out of listings. */
export const hiddenConversations: Migration = {
  version: 25,
  name: 'hidden conversations',
  sql: `
    ALTER TABLE conversations ADD COLUMN hidden boolean NOT NULL DEFAULT false;
  `,
};
