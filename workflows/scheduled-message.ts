/**
 * One firing of a scheduled message (src/agent/schedules.ts): queues the message as a step of its
 * agent and ends; the step itself runs in the agent's session, ordered with its other messages. The
 * firing's workflow id (Temporal appends the firing's time) names the run, so a retry queues it once.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { scheduleActivities } from '../activities/schedules';

const { sendScheduledMessage } = proxyActivities<ReturnType<typeof scheduleActivities>>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 10, nonRetryableErrorTypes: ['ScheduledMessageRefused'] },
});

export async function scheduledMessage(input: { scheduledMessageId: string }): Promise<string | null> {
  const sent = await sendScheduledMessage({ ...input, firingId: workflowInfo().workflowId });
  return sent?.runId ?? null;
}
