/**
 * The types of the application failures one layer throws and another tells apart: the names are what
 * crosses, in failures recorded in workflow histories, so they never change.
 */

/** The session refuses a turn when its queue is full; the API answers it (src/agent/turns.ts). */
export const QUEUE_FULL = 'AgentQueueFull';

/** A file deleted (or replaced) while it was being ingested: nothing more to do. */
export const FILE_GONE = 'FileGone';

/** The model provider refused or failed a call; its details hold Letta's error type. */
export const LLM_API_ERROR = 'LlmApiError';

/** A scheduled message its agent refuses (deleted, or its input invalid): its firing is not retried. */
export const SCHEDULED_MESSAGE_REFUSED = 'ScheduledMessageRefused';

/**
 * An activity attempt cut short by its process stopping (its worker's grace ended: activities/
 * interruption.ts). Not a failure of the call: past its retries, the turn schedules it again.
 */
export const ATTEMPT_INTERRUPTED = 'AttemptInterrupted';
