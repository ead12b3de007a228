import { Context, heartbeat } from '@temporalio/activity';

/** Used when an activity runs without a heartbeat timeout (tests calling it directly). */
const DEFAULT_INTERVAL_MS = 2_000;

/**
 * Heartbeats while `work` runs, four times per heartbeat timeout: a worker that dies is noticed within
 * that timeout (the activity is then retried elsewhere), and a cancelled run reaches the activity.
 */
export async function withHeartbeats<T>(work: Promise<T>): Promise<T> {
  const { heartbeatTimeoutMs: timeoutMs, isLocal } = Context.current().info;
  if (isLocal) return work; // a local activity lives inside its workflow task, which the worker keeps alive
  const timer = setInterval(() => heartbeat(), timeoutMs ? timeoutMs / 4 : DEFAULT_INTERVAL_MS);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}
