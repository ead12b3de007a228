/**
 * The agent session's and the agent-step workflow's signal and updates, shared with the API, which
 * sends them. Their payloads are defined in payloads.ts. Sandbox-safe: definitions only.
 */
import { defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ApprovalAnswered, QueuedStep } from './payloads';

export const approvalAnsweredSignal = defineSignal<[ApprovalAnswered]>('approvalAnswered');

/** A step gave its conversation's lane back while the session waited for it (src/db/lanes.ts). */
export const laneReleasedSignal = defineSignal('laneReleased');

/** A new message: its step waits for its turn. Refused when the queue is full. */
export const enqueueStepUpdate = defineUpdate<{ queued: number }, [QueuedStep]>('enqueueStep');

/**
 * Cancels the steps of these workflows (all, when none are named): queued ones never run, the running
 * one is cancelled. Completes once they have ended.
 */
export const cancelStepsUpdate = defineUpdate<{ cancelled: string[] }, [{ workflowIds?: string[] }]>(
  'cancelSteps',
);
