/**
 * The activities of an agent turn, with their options (its tool calls' by mode in
 * workflows/tool-calls.ts), and how a failed one becomes the run's stop reason.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  proxyActivities,
  proxyLocalActivities,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import type { AgentActivities } from '../contracts/activities';
import { LLM_API_ERROR } from '../contracts/errors';
import type { AgentTurnError, AgentTurnLimits } from '../contracts/payloads';
import { cancellationType, toolCaller, type ToolCallRequest, type ToolQueues } from './tool-calls';

/** Longest error message kept in the workflow's result (the history stays small). */
const ERROR_MESSAGE_CHARS = 500;

/**
 * The run's bookkeeping runs as local activities, in the workflow task that asks for them: short
 * database work, a few milliseconds each instead of a round trip through the server. They are
 * idempotent like every activity here, since a local activity runs again if its workflow task fails
 * before the worker reports it. The model call is a regular activity that heartbeats, listed under
 * Pending Activities while the provider answers (`localModelCalls`, LOCAL_MODEL_CALLS, makes it local).
 * Tool calls run through `runToolCall`, by their mode.
 */
export function turnActivities(limits: AgentTurnLimits, queues: ToolQueues, turnId?: string) {
  const bookkeeping: ActivityOptions & LocalActivityOptions = {
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds', maximumAttempts: 20 },
  };
  const model: ActivityOptions = {
    cancellationType,
    startToCloseTimeout: limits.modelTimeoutMs + 10_000,
    heartbeatTimeout: limits.heartbeatTimeoutMs,
    retry: {
      initialInterval: limits.modelRetryInitialMs,
      backoffCoefficient: 2,
      maximumInterval: '60 seconds',
      maximumAttempts: limits.modelMaxAttempts,
    },
  };
  const localModel: LocalActivityOptions = {
    cancellationType,
    startToCloseTimeout: model.startToCloseTimeout,
    retry: model.retry,
  };
  const local = proxyLocalActivities<AgentActivities>(bookkeeping);
  const refuse = (call: ToolCallRequest, reason: string) =>
    local.rejectToolCall({
      agentId: call.agentId,
      runId: call.runId,
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      reason,
    });
  return {
    runToolCall: toolCaller(limits, queues, refuse, turnId),
    /** The run's records and the turn's other short database work (`bookkeeping.finishRun`, ...). */
    bookkeeping: local,
    // Histories from before FINISH_RUN_LOCALLY (agent-turn.ts) ended their runs with a regular activity.
    regularBookkeeping: proxyActivities<AgentActivities>(bookkeeping),
    model: limits.localModelCalls
      ? proxyLocalActivities<AgentActivities>(localModel)
      : proxyActivities<AgentActivities>(model),
    // The model call names itself in the Temporal UI: it passes these options again with a summary.
    modelOptions: limits.localModelCalls ? localModel : model,
  };
}

function describe(error: unknown): string {
  const cause = error instanceof ActivityFailure ? error.cause : undefined;
  return `${(error as Error)?.message ?? String(error)}${cause ? `: ${cause.message}` : ''}`;
}

/** A failure's stop reason and Letta error: the model provider's refusal, or an error of ours. */
export function stopFor(error: unknown): { stopReason: string; error: AgentTurnError } {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  const message = describe(error).slice(0, ERROR_MESSAGE_CHARS);
  if (cause instanceof ApplicationFailure && cause.type === LLM_API_ERROR) {
    const type = typeof cause.details?.[0] === 'string' ? cause.details[0] : 'llm_error';
    return { stopReason: 'llm_api_error', error: { type, message } };
  }
  return { stopReason: 'error', error: { type: 'internal_error', message } };
}

export type TurnActivities = ReturnType<typeof turnActivities>;
