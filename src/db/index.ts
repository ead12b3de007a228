import path from 'node:path';
import type { ProcessSettings } from '../process-settings';
import type { DatabaseSettings } from './settings';
import type { Logger } from '../logger';
import { connectPostgres, openPglite, type Database } from './database';
import { migrate } from './migrate';
import { embeddingKind } from './archives';
import { loadSecretsKey, useSecretsKey } from '../secrets';

export type { Database, Queryable, Subscription } from './database';
import type { Queryable } from './database';

/**
 * `DATABASE_URL` when set, else the embedded PGlite in DATA_DIR; migrated before it is handed out, with
 * the secrets key that encrypts what it stores (src/secrets.ts) loaded first.
 */
export async function openDatabase(
  config: DatabaseSettings & Pick<ProcessSettings, 'dataDir'>,
  log: Logger,
): Promise<Database> {
  useSecretsKey(loadSecretsKey(config, log));
  const db = config.DATABASE_URL
    ? connectPostgres(config.DATABASE_URL, config.DATABASE_POOL_SIZE)
    : await openPglite(path.join(config.dataDir, 'pgdata'));
  log.info(
    {
      database:
        db.kind === 'postgres' ? redactUrl(config.DATABASE_URL!) : path.join(config.dataDir, 'pgdata'),
    },
    db.kind === 'postgres' ? 'using PostgreSQL from DATABASE_URL' : 'using the embedded PGlite database',
  );
  try {
    const applied = await migrate(db);
    log.info({ applied }, applied.length ? 'database migrated' : 'database schema is current');
    if ((await embeddingKind(db)) === 'real[]')
      log.info(
        'archival memory without pgvector (the database lacks the extension): embeddings are real[] arrays, searched exactly',
      );
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
  return db;
}

function redactUrl(raw: string): string {
  const url = new URL(raw);
  if (url.password) url.password = '***';
  return url.toString();
}

/** Whether the database answers (the health check's question). */
export async function pingDatabase(db: Queryable): Promise<void> {
  await db.query('SELECT 1');
}
