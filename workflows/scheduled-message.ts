/**
 * One firing of a scheduled message (src/agent/schedules.ts): queues the message as a turn of its
 * agent and ends; the turn itself runs in its conversation's session, ordered with its other messages. The
 * firing's workflow id (Temporal appends the firing's time) names the run, so a retry queues it once.
 */
import { proxyActivities, setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import type { ScheduleActivities } from '../contracts/activities';
import { SCHEDULED_MESSAGE_REFUSED } from '../contracts/errors';

const { sendScheduledMessage } = proxyActivities<ScheduleActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 10, nonRetryableErrorTypes: [SCHEDULED_MESSAGE_REFUSED] },
});

export async function scheduledMessage(input: { scheduledMessageId: string }): Promise<string | null> {
  const sent = await sendScheduledMessage({ ...input, firingId: workflowInfo().workflowId });
  return sent?.runId ?? null;
}

/**
 * Worker versioning (README "Upgrades"): AUTO_UPGRADE. A firing lasts a moment, but one due while the
 * server is being replaced starts on whichever version is current, and a pinned one would stay on a
 * version that may be gone. One activity: replay-safe by construction (scheduled-message is in the
 * corpus).
 */
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, scheduledMessage);
