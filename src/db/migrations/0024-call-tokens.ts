import type { Migration } from './migration';

/**
 * A sandboxed call's token (src/access/tool-api-access.ts) remembers its call: the calling agent and
 * its run (`caller`), so that the agents the call creates become its own and its messages continue the
 * run's chain of waiting agents. An agent remembers the agent whose call created it.
 */
export const callTokens: Migration = {
  version: 24,
  name: 'call tokens',
  sql: `
    ALTER TABLE access_tokens ADD COLUMN caller jsonb;
    ALTER TABLE agents ADD COLUMN created_by_agent_id text;
    CREATE INDEX agents_created_by ON agents (created_by_agent_id) WHERE created_by_agent_id IS NOT NULL;
  `,
};
