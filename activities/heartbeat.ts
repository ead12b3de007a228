import { Context } from '@temporalio/activity';

/** The most time between heartbeats: a cancelled run reaches the call within about this long. */
const MAX_INTERVAL_MS = 1_000;

/** What each running activity last reported of its progress: every heartbeat carries it again. */
const progress = new WeakMap<Context, unknown>();

/**
 * Heartbeats while `work` runs, every second (or four times per heartbeat timeout, if that is shorter):
 * a worker that dies is noticed within that timeout (the activity is then retried elsewhere), and a
 * cancelled run reaches the activity (the worker sends them at most as often, see src/temporal/worker.ts).
 */
export async function withHeartbeats<T>(work: Promise<T>): Promise<T> {
  const context = Context.current();
  const { heartbeatTimeoutMs: timeoutMs, isLocal } = context.info;
  if (isLocal) return work; // a local activity lives inside its workflow task, which the worker keeps alive
  const timer = setInterval(
    () => context.heartbeat(lastDetails(context)),
    Math.min(timeoutMs ? timeoutMs / 4 : MAX_INTERVAL_MS, MAX_INTERVAL_MS),
  );
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

/**
 * What the attempt's heartbeats carry: its own last progress, else what the attempt before it last
 * reported, so that a retry which dies too still leaves that (an MCP call's task) to the next one.
 */
export function lastDetails(context: Context): unknown {
  return progress.has(context) ? progress.get(context) : context.info.heartbeatDetails;
}

/**
 * Heartbeats with what the call has done so far (tokens streamed, an MCP server's progress), which the
 * Temporal UI shows under the pending activity. A local activity has no heartbeats: its workflow task
 * stands for it.
 */
export function heartbeatProgress(details: unknown): void {
  const context = Context.current();
  if (context.info.isLocal) return;
  progress.set(context, details);
  context.heartbeat(details);
}

/**
 * Notes what the call has done so far for its next heartbeat (`withHeartbeats`', at most a second
 * away): for progress that moves at every step of a busy loop (a streamed reply's deltas), where a
 * heartbeat at each step would cost more than the step.
 */
export function noteProgress(details: unknown): void {
  const context = Context.current();
  if (!context.info.isLocal) progress.set(context, details);
}
