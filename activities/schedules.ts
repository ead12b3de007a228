/** A scheduled message's firing: queues its turn (src/agent/schedules.ts). */
import { ApplicationFailure } from '@temporalio/activity';
import { fireScheduledMessage } from '../src/agent/schedules';
import type { TurnServices } from '../src/agent/turns';
import { DomainError } from '../src/errors';
import type { ScheduleActivities } from '../contracts/activities';
import { SCHEDULED_MESSAGE_REFUSED } from '../contracts/errors';

export function scheduleActivities(services: TurnServices) {
  return {
    async sendScheduledMessage(input: { scheduledMessageId: string; firingId: string }) {
      try {
        return await fireScheduledMessage(services, input);
      } catch (error) {
        // The agent is gone, waits for an approval, or has too many messages queued: this firing is
        // skipped (its workflow fails, as the Temporal UI shows), the next one tries again.
        if (error instanceof DomainError)
          throw ApplicationFailure.nonRetryable(error.message, SCHEDULED_MESSAGE_REFUSED);
        throw error;
      }
    },
  } satisfies ScheduleActivities;
}
