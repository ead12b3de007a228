/**
 * One call, one runner at a time. An attempt of a tool call takes the call's claim with its read
 * (src/db/tool-claims.ts) before the tool runs; an attempt that finds the claim held by another live
 * attempt waits until that one records the call, gives the claim up, or lets its lease run out. While
 * the tool runs, the holder renews its lease; a renewal that finds the claim taken over stops the tool
 * (its abort signal) and the attempt fails without recording. The record is made only by the holder.
 * So two attempts never run one call at the same time, whatever the timing of Temporal's retries, a
 * worker's pause or a workflow task handed over; the one gap left is a holder cut off from the database
 * for longer than its lease, which then cannot record what its tool did.
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import type { Queryable } from '../src/db';
import { renewClaim, type ClaimHolder } from '../src/db/tool-claims';
import { ClaimLostError, recordUnrunCall, type ToolExecution } from '../src/db/tool-executions';
import { lastDetails, withHeartbeats } from './heartbeat';

/**
 * A claim's lease: the activity's heartbeat timeout, after which Temporal retries an attempt whose
 * worker died, so the retry finds the dead attempt's lease just run out. A local activity has none.
 */
const LOCAL_ACTIVITY_LEASE_MS = 20_000;

/** How often a waiting attempt looks at the claim again. */
const WAIT_INTERVAL_MS = 1_000;

/** A holder unique to this attempt, named for the operator who finds it in the table. */
export function claimHolder(): ClaimHolder {
  const { workflowExecution, activityId, attempt, heartbeatTimeoutMs } = Context.current().info;
  return {
    owner: `${workflowExecution?.workflowId ?? 'activity'}/${activityId}/${attempt}/${randomUUID()}`,
    leaseMs: heartbeatTimeoutMs || LOCAL_ACTIVITY_LEASE_MS,
  };
}

/**
 * Reads the call (taking its claim) until the claim is this attempt's or nothing is left to run: the
 * call was recorded, or its agent is gone.
 */
export async function readClaimed<R extends { claimed: boolean; done?: unknown; agent?: unknown }>(
  read: () => Promise<R>,
): Promise<R> {
  const context = Context.current();
  for (;;) {
    const result = await read();
    if (result.claimed || result.done || !result.agent) return result;
    if (!context.info.isLocal) context.heartbeat(lastDetails(context));
    await context.sleep(WAIT_INTERVAL_MS);
  }
}

/**
 * Records a result no tool run made (a refusal) under the call's claim (recordUnrunCall), waiting as
 * an attempt waits while another attempt holds it: a hung holder and the refusal never both record.
 */
export async function recordUnrunClaimed(
  db: Queryable,
  execution: ToolExecution,
): Promise<{ recorded: ToolExecution; made: boolean }> {
  const context = Context.current();
  const { owner } = claimHolder();
  for (;;) {
    const result = await recordUnrunCall(db, execution, owner);
    if (result !== 'held') return result;
    if (!context.info.isLocal) context.heartbeat(lastDetails(context));
    await context.sleep(WAIT_INTERVAL_MS);
  }
}

/**
 * Runs `work` while holding the claim: heartbeats as a long call does, the lease renewed at a quarter
 * of its length. `work`'s signal aborts on the run's cancel and on the claim's loss.
 */
export async function holdingClaim<T>(
  db: Queryable,
  toolCallId: string,
  holder: ClaimHolder,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const lost = new AbortController();
  const renewal = setInterval(() => {
    renewClaim(db, toolCallId, holder).then(
      (held) => held || lost.abort(new ClaimLostError(toolCallId)),
      () => undefined, // the next renewal tries again; the lease outlasts a few failures
    );
  }, holder.leaseMs / 4);
  try {
    const signal = AbortSignal.any([Context.current().cancellationSignal, lost.signal]);
    const result = await withHeartbeats(work(signal));
    if (lost.signal.aborted) throw lost.signal.reason;
    return result;
  } finally {
    clearInterval(renewal);
  }
}
