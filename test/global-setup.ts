import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { RunningDevServer } from '../src/temporal/dev-server';
import { testDatabaseUrl } from './helpers/env';
import { startTemporalServer } from './helpers/temporal-server';
import { projectRoot } from '../src/paths';

declare global {
  var testTemporal: { server: RunningDevServer; dataDir: string } | undefined;
}

/**
 * The built server (dist/), and one real Temporal dev server for the whole run, started the way the
 * server starts its own.
 */
export default async function globalSetup(): Promise<void> {
  await checkPostgres();
  // Tests that run the server as separate processes (as users do) run the built code.
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: projectRoot, stdio: 'pipe' });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-temporal-test-'));
  const { server } = await startTemporalServer(dataDir);
  globalThis.testTemporal = { server, dataDir };
  process.env.TEST_TEMPORAL_ADDRESS = server.address;
  process.env.TEST_TEMPORAL_UI_URL = server.uiUrl;
}

/**
 * PostgreSQL at the tests' URL; on a machine without it (the default URL, run as root), set up as
 * scripts/setup-postgres.sh does: installed from Debian, started, the role and database created.
 */
async function checkPostgres(): Promise<void> {
  const reachable = await connects();
  if (reachable === true) return;
  const canSetUp = !process.env.DATABASE_URL && process.getuid?.() === 0;
  if (canSetUp) {
    execFileSync('bash', [path.join(projectRoot, 'scripts/setup-postgres.sh')], { stdio: 'inherit' });
    if ((await connects()) === true) return;
  }
  throw new Error(
    `PostgreSQL at ${testDatabaseUrl()} is not reachable (${String(reachable)}); ` +
      'run scripts/setup-postgres.sh as root, or set DATABASE_URL',
  );
}

/** True when the tests' database answers; the error otherwise. */
async function connects(): Promise<true | unknown> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch (error) {
    return error;
  }
}
