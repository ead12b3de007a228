/** The server process's own settings: where it keeps its data, and how long it may take to stop. */
import { z } from 'zod';
import { milliseconds } from './settings-fields';

export const processSettings = z
  .object({
    DATA_DIR: z.string().min(1).default('./data').describe('embedded database and Temporal history'),
    SHUTDOWN_GRACE_MS: milliseconds
      .default(30_000)
      .describe(
        "on SIGTERM, SIGINT or SIGHUP, how long the model and tool calls running here may take to finish (the API refuses new turns at once); a call still running then is cut short, recorded nowhere, and retried on another worker or after the restart. Kubernetes' `terminationGracePeriodSeconds` (30 s by default) and `docker stop -t` (10 s by default) must cover `SHUTDOWN_TIMEOUT_MS`, or the process is killed first (see [Stopping and deploying](operations.md#stopping-and-deploying))",
      ),
    SHUTDOWN_TIMEOUT_MS: milliseconds
      .default(45_000)
      .describe(
        'how long a graceful shutdown may take in all before the process exits anyway: at least `SHUTDOWN_GRACE_MS` plus 10000 (calls cut short stop, then the API, the database and the embedded Temporal server close)',
      ),
  })
  .meta({
    title: 'The server process',
    description: 'Where the server keeps its data, and how long a graceful stop may take.',
  });

/** The settings, with DATA_DIR resolved to an absolute path once at start-up (`loadConfig`). */
export type ProcessSettings = z.infer<typeof processSettings> & { dataDir: string };

/**
 * What a graceful stop needs past its grace: the calls cut short stop and let go of their claims (the
 * workers' own margin, src/temporal/worker.ts), then the API, the database and the embedded Temporal
 * server close.
 */
export const SHUTDOWN_MARGIN_MS = 10_000;

/** Why a shutdown timeout leaves no time past the grace, or nothing when it does. */
export function shutdownProblem(settings: z.infer<typeof processSettings>): string | undefined {
  if (settings.SHUTDOWN_TIMEOUT_MS >= settings.SHUTDOWN_GRACE_MS + SHUTDOWN_MARGIN_MS) return undefined;
  return `SHUTDOWN_TIMEOUT_MS=${settings.SHUTDOWN_TIMEOUT_MS}: must be at least SHUTDOWN_GRACE_MS (${settings.SHUTDOWN_GRACE_MS}) + ${SHUTDOWN_MARGIN_MS}, so that the calls cut short when the grace ends can stop and the server close before the process exits anyway`;
}
