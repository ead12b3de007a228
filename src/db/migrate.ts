import type { Database } from './database';
import { migrations as knownMigrations } from './migrations';
import type { Migration } from './migrations/migration';

export class SchemaTooNewError extends Error {
  override name = 'SchemaTooNewError';
}

/** Any constant works; it only has to be the same for every process migrating this database. */
const MIGRATION_LOCK_KEY = 72_338_283;

/**
 * Applies the pending migrations in one transaction under an advisory lock, so replicas starting
 * together take turns and a failed migration leaves the schema as it was. Returns the versions applied.
 */
export async function migrate(db: Database, migrations: Migration[] = knownMigrations): Promise<number[]> {
  const latestKnown = Math.max(0, ...migrations.map((m) => m.version));
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const applied = new Set(
      (await tx.query<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => r.version),
    );
    const newest = Math.max(0, ...applied);
    if (newest > latestKnown) {
      throw new SchemaTooNewError(
        `The database schema is at version ${newest}, newer than this server knows (${latestKnown}): ` +
          'upgrade the server, or point it at another database.',
      );
    }
    const pending = migrations.filter((m) => !applied.has(m.version)).sort((a, b) => a.version - b.version);
    for (const migration of pending) {
      await tx.exec(migration.sql);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
    }
    return pending.map((m) => m.version);
  });
}
