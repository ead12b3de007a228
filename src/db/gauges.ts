/**
 * What the metrics read from the database at each scrape. Waiting calls are summed from the deltas
 * their changes leave (migration 0040), a few rows however many wait; queued runs by a scan of `runs`
 * for status `created`.
 */
import type { Queryable } from './database';

/** Calls waiting for an answer, by kind (`approval`: a person's; `client_tool`: the client's return). */
export async function waitingCallCounts(db: Queryable): Promise<{ kind: string; count: number }[]> {
  return db.query<{ kind: string; count: number }>(
    `SELECT kind, sum(delta)::int AS count FROM waiting_call_deltas GROUP BY kind`,
  );
}

/** Runs queued in their sessions (created, not yet started): in all, and in the longest queue. */
export async function queuedRunCounts(db: Queryable): Promise<{ queued: number; longest: number }> {
  const [row] = await db.query<{ queued: number; longest: number }>(
    `SELECT coalesce(sum(n), 0)::int AS queued, coalesce(max(n), 0)::int AS longest
     FROM (SELECT count(*) AS n FROM runs WHERE status = 'created' GROUP BY agent_id, conversation_id) q`,
  );
  return row;
}
