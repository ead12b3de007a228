import { z } from 'zod';
import type { NativeConnection } from '@temporalio/worker';
import { pingDatabase, type Database } from '../db';
import { errorText } from '../temporal/connection';
import { version } from '../paths';
import { documentedRouter, type DocumentedRouter } from './route-book';
import type { ServerStopping } from './stopping';

export interface HealthDependencies {
  db: Database;
  temporal: NativeConnection;
  timeoutMs: number;
  /** A stopping server answers 503 `stopping`, so a load balancer sends no more requests to it. */
  stopping?: ServerStopping;
}

/** Resolves to 'ok' or to why the check failed, within `timeoutMs`. */
async function check(probe: () => Promise<unknown>, timeoutMs: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
  });
  try {
    return await Promise.race([probe().then(() => 'ok'), timeout]);
  } catch (error) {
    return errorText(error);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The Letta server release whose API this one speaks. Clients read `version` as Letta's (letta-code
 * warns of an outdated server below 0.16.6), so it is this; our own is `server_version`.
 */
export const LETTA_API_VERSION = '0.16.8';

/**
 * `GET /v1/health/` (routes are not strict, so both slash forms match): 200 `{status:"ok",version}`
 * (Letta's shape) only when PostgreSQL and Temporal answer, and the server is not stopping.
 */
const HealthSchema = z
  .object({
    status: z.enum(['ok', 'unavailable', 'stopping']),
    version: z.string(),
    server_version: z.string(),
    checks: z.object({ database: z.string(), temporal: z.string() }).optional(),
  })
  .meta({ id: 'Health' });

export function healthRouter({ db, temporal, timeoutMs, stopping }: HealthDependencies): DocumentedRouter {
  const router = documentedRouter('Health', { public: true });
  const doc = {
    summary: 'Check the server',
    description:
      'Open without the password. 503 with `checks` when PostgreSQL or Temporal does not answer; 503 `stopping` while the server stops (it takes no new turns).',
    response: HealthSchema,
  };
  router.get('/v1/health', doc, async (_req, res) => {
    if (stopping?.stopping)
      return void res
        .status(503)
        .json({ status: 'stopping', version: LETTA_API_VERSION, server_version: version });
    const [database, temporalStatus] = await Promise.all([
      check(() => pingDatabase(db), timeoutMs),
      check(() => temporal.workflowService.getSystemInfo({}), timeoutMs),
    ]);
    const healthy = database === 'ok' && temporalStatus === 'ok';
    res.status(healthy ? 200 : 503).json({
      status: healthy ? 'ok' : 'unavailable',
      version: LETTA_API_VERSION,
      server_version: version,
      ...(healthy ? {} : { checks: { database, temporal: temporalStatus } }),
    });
  });
  return router;
}
