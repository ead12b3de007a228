import type { Migration } from './migration';

/**
 * Whose attempt a tool call's claim was taken from (src/db/tool-claims.ts): set when an attempt takes
 * over a claim whose holder started the call and never recorded it (its lease ran out, or it let go
 * at a shutdown), so the attempt knows the tool may have run and acts by the tool's retry policy; and
 * how many times that happened to the call, which accounts for every time its tool may have run again.
 */
export const toolCallTakeovers: Migration = {
  version: 33,
  name: 'tool call takeovers',
  sql: `ALTER TABLE tool_call_claims ADD COLUMN taken_from text,
    ADD COLUMN takeovers integer NOT NULL DEFAULT 0;`,
};
