/**
 * A call's activity whose last attempt was cut short by its process stopping is run again. Temporal's
 * retry policy counts every attempt, and an attempt ends the same way whether its tool failed or its
 * worker stopped under it: a deploy past SHUTDOWN_GRACE_MS (the attempt fails `AttemptInterrupted`) or
 * a crash (its heartbeats stop). Neither is a failure of the call, so neither may use up its attempts:
 * a call cut short on each worker of a rolling restart would otherwise end as an error the model reads.
 * The activity run again takes the call over by its claim, as a retry does (activities/tool-call.ts).
 */
import { ActivityFailure, ApplicationFailure, TimeoutFailure, patched } from '@temporalio/workflow';
import { ATTEMPT_INTERRUPTED } from '../contracts/errors';

/** Histories recorded before ended a call whose last attempt was interrupted, and replay so. */
const RUN_INTERRUPTED_AGAIN = 'run-interrupted-activities-again';

/** Turns started before ACTIVITY_MAX_INTERRUPTIONS existed run a call again up to this many times. */
const DEFAULT_MAX_INTERRUPTIONS = 10;

/** Whether an activity's last attempt was cut short by its process stopping, not failed by its work. */
function lastAttemptInterrupted(error: unknown): boolean {
  if (!(error instanceof ActivityFailure)) return false;
  const { cause } = error;
  if (cause instanceof TimeoutFailure) return cause.timeoutType === 'HEARTBEAT';
  return cause instanceof ApplicationFailure && cause.type === ATTEMPT_INTERRUPTED;
}

/** `schedule`'s result, scheduling it again while its last attempt was interrupted, up to `limit` times. */
export async function throughInterruptions<T>(
  limit: number | undefined,
  schedule: () => Promise<T>,
): Promise<T> {
  for (let again = 0; ; again++) {
    try {
      return await schedule();
    } catch (error) {
      const runsAgain =
        again < (limit ?? DEFAULT_MAX_INTERRUPTIONS) &&
        lastAttemptInterrupted(error) &&
        patched(RUN_INTERRUPTED_AGAIN);
      if (!runsAgain) throw error;
    }
  }
}
