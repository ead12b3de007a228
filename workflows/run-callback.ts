/**
 * The delivery of a run's completion callback: one activity, retried with backoff until the receiver
 * answers 2xx or the attempts are spent (the workflow then fails, as the Temporal UI shows; the run
 * keeps the last attempt's status and error). Its own workflow, so that a slow receiver holds up no
 * step of the agent, and a restart of every component loses no delivery.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { RunCallbackInput } from '../activities/contracts';
import type { runCallbackActivities } from '../activities/run-callback';

export async function runCallback(input: RunCallbackInput): Promise<void> {
  const { postRunCallback } = proxyActivities<ReturnType<typeof runCallbackActivities>>({
    startToCloseTimeout: input.timeoutMs + 5_000,
    retry: {
      initialInterval: input.initialRetryMs,
      backoffCoefficient: 2,
      maximumInterval: input.maxRetryMs,
      maximumAttempts: input.maxAttempts,
    },
  });
  await postRunCallback({ runId: input.runId });
}
