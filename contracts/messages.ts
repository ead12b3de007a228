/**
 * The agent session's and the agent-turn workflow's signals and updates, shared with the API, which
 * sends them. Their payloads are defined in payloads.ts. Sandbox-safe: definitions only.
 *
 * The names Temporal knows them by (`enqueueStep`, `cancelSteps`) are the ones recorded histories
 * hold: a workflow replays its history by them, so they stay when the words of the code change.
 */
import { defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ApprovalAnswered, QueuedTurn, RunStopped } from './payloads';

export const approvalAnsweredSignal = defineSignal<[ApprovalAnswered]>('approvalAnswered');

/** A turn gave its conversation's lane back while the session waited for it (src/db/lanes.ts). */
export const laneReleasedSignal = defineSignal('laneReleased');

/**
 * A run that carried another agent's message has stopped (ended or paused): its turn, or the session
 * that dropped it, tells the agent message's call waiting for it (AgentTurnInput.replyTo).
 */
export const messageRunStoppedSignal = defineSignal<[RunStopped]>('messageRunStopped');

/** A new message: its turn is queued. Refused when the queue is full. */
export const enqueueTurnUpdate = defineUpdate<{ queued: number }, [QueuedTurn]>('enqueueStep');

/**
 * Cancels the turns of these workflows (all, when none are named): queued ones never run, the running
 * one is cancelled. Completes once they have ended.
 */
export const cancelTurnsUpdate = defineUpdate<{ cancelled: string[] }, [{ workflowIds?: string[] }]>(
  'cancelSteps',
);
