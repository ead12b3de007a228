/**
 * Why a running attempt was stopped, and what that allows it to say. Only a person's cancel of the run
 * (`cancelRequested`) ends a call with a result that says it was cancelled. Any other stop cuts the
 * attempt short: its worker shutting down past its grace (`workerShutdown`), the server no longer
 * waiting for it (timed out, not found, paused, reset). Such an attempt records nothing, since what its
 * tool gave when stopped is not the tool's answer, and fails; Temporal retries it, as it retries an
 * attempt whose worker died.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { ATTEMPT_INTERRUPTED } from '../contracts/errors';

/** Whether the attempt was stopped by a person's cancel of its run. */
export function cancelledByPerson(context = Context.current()): boolean {
  return context.cancellationSignal.aborted && context.cancellationDetails?.cancelRequested === true;
}

/** Whether the attempt was stopped by anything but a person's cancel of its run. */
export function attemptInterrupted(context = Context.current()): boolean {
  return context.cancellationSignal.aborted && !cancelledByPerson(context);
}

/** What stopped an interrupted attempt, in a few words. */
function stoppedBy(context: Context): string {
  const details = context.cancellationDetails;
  if (details?.workerShutdown) return 'its worker shut down';
  if (details?.timedOut) return 'it timed out';
  if (details?.paused) return 'its activity was paused';
  if (details?.reset) return 'its activity was reset';
  return 'the server no longer waits for it';
}

/** The failure an interrupted attempt ends with: retryable, and retried like one whose worker died. */
export function interruption(what: string, context = Context.current()): ApplicationFailure {
  return ApplicationFailure.retryable(
    `${what} was interrupted (${stoppedBy(context)}) before it ended; it is retried`,
    ATTEMPT_INTERRUPTED,
  );
}
