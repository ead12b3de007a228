import type { Migration } from './migration';

/**
 * The builds of each worker deployment in the order this database first saw them
 * (src/temporal/versioning.ts): every replica shares it, and Temporal's own record of a version
 * (which `temporal worker deployment delete-version` erases) plays no part in it. `first_current_at`
 * is when a replica first found or made the build current.
 */
export const workerBuilds: Migration = {
  version: 35,
  name: 'worker builds',
  sql: `
    CREATE TABLE worker_builds (
      deployment_name text NOT NULL,
      build_id text NOT NULL,
      seen_order bigint GENERATED ALWAYS AS IDENTITY,
      first_seen_at timestamptz NOT NULL DEFAULT now(),
      first_current_at timestamptz,
      PRIMARY KEY (deployment_name, build_id)
    );
  `,
};
