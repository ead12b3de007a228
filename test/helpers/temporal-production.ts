import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../src/paths';

const run = promisify(execFile);
const script = path.join(projectRoot, 'scripts/temporal-production.sh');

/** Temporal's production server (scripts/temporal-production.sh), as a bench reaches it. */
export interface ProductionTemporal {
  address: string;
  /** The server's process id: its CPU is read from /proc. */
  pid: number;
  /** Stops the server when this start started it; one that ran before is left running. */
  stop(): Promise<void>;
}

/**
 * Starts Temporal's production server on PostgreSQL with the script (built once, a few minutes), or
 * joins the one it started earlier. TEMPORAL_PRODUCTION_PORT and TEMPORAL_PRODUCTION_DIR reach the
 * script through the environment, as the other settings the script reads do.
 */
export async function startProductionTemporal(): Promise<ProductionTemporal> {
  const wasRunning = await run('bash', [script, 'status']).then(
    () => true,
    () => false,
  );
  const started = await run('bash', [script, 'start'], { maxBuffer: 16 * 1024 * 1024 });
  const address = /TEMPORAL_ADDRESS=(\S+)/.exec(started.stderr)?.[1];
  if (!address) throw new Error(`scripts/temporal-production.sh start said no address:\n${started.stderr}`);
  const stateDir = path.resolve(
    projectRoot,
    process.env.TEMPORAL_PRODUCTION_DIR ?? path.join('data', 'temporal-production'),
  );
  const pid = Number(fs.readFileSync(path.join(stateDir, 'temporal-server.pid'), 'utf8'));
  return {
    address,
    pid,
    stop: async () => {
      if (!wasRunning) await run('bash', [script, 'stop']);
    },
  };
}
