/**
 * A tool call's claim: the one attempt that may run the call, with a lease it renews while the tool
 * runs. Taken in the statement that reads the call (src/db/tool-calls.ts), before any side effect;
 * checked and closed by the statement that records the result (src/db/tool-executions.ts), so a
 * record is made only by the claim's holder and a recorded call is never claimed again. Leases are
 * measured on the database's clock, the one clock every worker shares.
 */
import type { Queryable } from './database';

/** Who holds a claim, and for how long a taking or a renewal holds it. */
export interface ClaimHolder {
  /** Unique to one attempt of one call. */
  owner: string;
  leaseMs: number;
}

/**
 * Takes the claim of call $1 (agent $2) for owner $6, leased for $7 ms: when no one holds it, when
 * this owner holds it already, or when its holder's lease ran out. Never once the call is recorded
 * (its lease is then infinite), nor for an agent that no longer exists. Two attempts taking it at once
 * are ordered by the row: the second sees the first's claim and takes nothing. Taken from another
 * owner, the claim keeps that owner as `taken_from` and counts the takeover: an attempt started the
 * call and never recorded it, so the tool may have run (a claim given up, `releaseClaim`, leaves no row
 * to take over).
 */
export const TAKE_CLAIM = `INSERT INTO tool_call_claims AS c (tool_call_id, agent_id, owner, lease_until)
    SELECT $1, $2, $6, now() + $7::int * interval '1 millisecond'
    WHERE EXISTS (SELECT 1 FROM agents WHERE id = $2)
      AND NOT EXISTS (SELECT 1 FROM tool_executions WHERE tool_call_id = $1)
    ON CONFLICT (tool_call_id) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until,
        taken_from = CASE WHEN c.owner = excluded.owner THEN c.taken_from ELSE c.owner END,
        takeovers = c.takeovers + CASE WHEN c.owner = excluded.owner THEN 0 ELSE 1 END
      WHERE c.lease_until <> 'infinity' AND (c.owner = excluded.owner OR c.lease_until < now())
    RETURNING owner, taken_from`;

/**
 * Takes the claim of call $1 (agent `$${agentParam}`) for owner `$${ownerParam}` and closes it at once, for a record
 * no tool run makes (a refusal, a client's return, a denial): as TAKE_CLAIM takes it, never from a
 * holder whose lease still runs, so such a record and a running attempt's never both stand.
 */
export const takeClosedClaim = (agentParam: number, ownerParam: number) => `INSERT INTO tool_call_claims AS c
      (tool_call_id, agent_id, owner, lease_until)
    SELECT $1, $${agentParam}, $${ownerParam}, 'infinity'
    WHERE EXISTS (SELECT 1 FROM agents WHERE id = $${agentParam})
      AND NOT EXISTS (SELECT 1 FROM tool_executions WHERE tool_call_id = $1)
    ON CONFLICT (tool_call_id) DO UPDATE SET owner = excluded.owner, lease_until = 'infinity',
        taken_from = c.owner, takeovers = c.takeovers + 1
      WHERE c.lease_until <> 'infinity' AND c.lease_until < now()
    RETURNING 1`;

/**
 * Closes the claim of call $1 held by owner `$${ownerParam}` (and only `where` holds), in the
 * statement that records the call: the record is made only where this yields a row.
 */
export const closeClaim = (ownerParam: number, where = 'true') => `UPDATE tool_call_claims
    SET lease_until = 'infinity'
    WHERE tool_call_id = $1 AND owner = $${ownerParam} AND lease_until <> 'infinity' AND ${where}
    RETURNING 1`;

/** Renews the holder's lease; false when the claim is no longer its own (it ran out and was taken). */
export async function renewClaim(db: Queryable, toolCallId: string, holder: ClaimHolder): Promise<boolean> {
  const rows = await db.query(
    `UPDATE tool_call_claims SET lease_until = now() + $3::int * interval '1 millisecond'
      WHERE tool_call_id = $1 AND owner = $2 AND lease_until <> 'infinity' RETURNING 1`,
    [toolCallId, holder.owner, holder.leaseMs],
  );
  return rows.length > 0;
}

/**
 * Gives the claim up, so that the next attempt of a call that failed before its tool started need not
 * wait for its lease: it takes a fresh claim, a plain retry. A claim this attempt took over is let go
 * of instead (as abandonClaim does): the attempt before it may have run the tool, which the next
 * attempt must know still.
 */
export async function releaseClaim(db: Queryable, toolCallId: string, owner: string): Promise<void> {
  await db.query(
    `WITH given_up AS (DELETE FROM tool_call_claims
        WHERE tool_call_id = $1 AND owner = $2 AND lease_until <> 'infinity' AND taken_from IS NULL)
      UPDATE tool_call_claims SET lease_until = '-infinity'
        WHERE tool_call_id = $1 AND owner = $2 AND lease_until <> 'infinity' AND taken_from IS NOT NULL`,
    [toolCallId, owner],
  );
}

/**
 * Lets go of a claim whose tool may have run without leaving its lease to run out (an attempt
 * interrupted at a worker's shutdown, or one that took the call over): the next attempt takes it over
 * at once, and knows it is a takeover.
 */
export async function abandonClaim(db: Queryable, toolCallId: string, owner: string): Promise<void> {
  await db.query(
    `UPDATE tool_call_claims SET lease_until = '-infinity'
      WHERE tool_call_id = $1 AND owner = $2 AND lease_until <> 'infinity'`,
    [toolCallId, owner],
  );
}
