import type { Queryable } from './database';

/** This deployment's id (migration 0011): every process on one database has the same. */
export async function loadDeploymentId(db: Queryable): Promise<string> {
  const [row] = await db.query<{ value: string }>(
    `SELECT value FROM server_metadata WHERE key = 'deployment_id'`,
  );
  return row.value;
}
