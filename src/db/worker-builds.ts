import type { Queryable } from './database';

/** A build of a worker deployment, as this database knows it (migration 0035). */
export interface WorkerBuild {
  buildId: string;
  /** The order in which builds were first seen: a larger number is a later build. */
  order: number;
  /** Whether a replica has found or made it current. */
  wasCurrent: boolean;
}

/** Records `buildId` as seen, once: a build keeps the place of its first start. */
export async function recordWorkerBuild(db: Queryable, deployment: string, buildId: string): Promise<void> {
  await db.query(
    `INSERT INTO worker_builds (deployment_name, build_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
    [deployment, buildId],
  );
}

export async function workerBuilds(db: Queryable, deployment: string): Promise<WorkerBuild[]> {
  return db.query<WorkerBuild>(
    `SELECT build_id AS "buildId", seen_order AS "order", first_current_at IS NOT NULL AS "wasCurrent"
       FROM worker_builds WHERE deployment_name = $1 ORDER BY seen_order`,
    [deployment],
  );
}

/** Notes that `buildId` is current (a build not recorded, one from before this record, is left out). */
export async function markWorkerBuildCurrent(
  db: Queryable,
  deployment: string,
  buildId: string,
): Promise<void> {
  await db.query(
    `UPDATE worker_builds SET first_current_at = now()
      WHERE deployment_name = $1 AND build_id = $2 AND first_current_at IS NULL`,
    [deployment, buildId],
  );
}
