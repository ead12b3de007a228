import type { Migration } from './migration';

/**
 * The deployment's id, which its task queues and workflow ids carry: two servers with their own
 * databases on one Temporal namespace then never take each other's work. A database with turns still
 * running or paused keeps the names they were started under (an empty id), or they would never resume.
 */
export const deploymentId: Migration = {
  version: 11,
  name: 'deployment id',
  sql: `
    INSERT INTO server_metadata (key, value)
    SELECT 'deployment_id', to_jsonb(CASE
      WHEN EXISTS (SELECT 1 FROM runs WHERE status IN ('created', 'running'))
        OR EXISTS (SELECT 1 FROM agents WHERE pending_approval IS NOT NULL) THEN ''
      ELSE substr(replace(gen_random_uuid()::text, '-', ''), 1, 12)
    END);
  `,
};
