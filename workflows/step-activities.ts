/**
 * The activities of an agent step other than its tool calls (workflows/tool-executors.ts), with their
 * options, and how a failed one becomes the step's stop reason.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  patched,
  proxyActivities,
  setCurrentDetails,
  upsertSearchAttributes,
  proxyLocalActivities,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import type { AgentActivities } from '../contracts/activities';
import { LLM_API_ERROR } from '../contracts/errors';
import type {
  AgentStepError,
  AgentStepLimits,
  AgentStepResult,
  ApprovalWait,
  RunUsage,
  StepCall,
} from '../contracts/payloads';
import { stopReasonKey } from '../contracts/search-attributes';
import { cancellationType, toolRunner, type ToolQueues } from './tool-executors';

/** Longest error message kept in the workflow's result (the history stays small). */
const ERROR_MESSAGE_CHARS = 500;

/**
 * The run's bookkeeping runs as local activities, in the workflow task that asks for them: short
 * database work, a few milliseconds each instead of a round trip through the server. They are
 * idempotent like every activity here, since a local activity runs again if its workflow task fails
 * before the worker reports it. The model call is a regular activity that heartbeats, listed under
 * Pending Activities while the provider answers (`localModelCalls`, LOCAL_MODEL_CALLS, makes it local).
 * Tool calls run through the executor of their mode.
 */
export function stepActivities(limits: AgentStepLimits, queues: ToolQueues) {
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
  return {
    runTool: toolRunner(limits, queues),
    run: proxyLocalActivities<AgentActivities>(bookkeeping),
    // Histories from before FINISH_RUN_LOCALLY ended their runs with a regular activity: they replay so.
    runEndUnpatched: proxyActivities<AgentActivities>(bookkeeping),
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
export function stopFor(error: unknown): { stopReason: string; error: AgentStepError } {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  const message = describe(error).slice(0, ERROR_MESSAGE_CHARS);
  if (cause instanceof ApplicationFailure && cause.type === LLM_API_ERROR) {
    const type = typeof cause.details?.[0] === 'string' ? cause.details[0] : 'llm_error';
    return { stopReason: 'llm_api_error', error: { type, message } };
  }
  return { stopReason: 'error', error: { type: 'internal_error', message } };
}

/** How a request ended, and what is still to be stored for it. */
export interface RequestOutcome {
  stopReason: string;
  usage: RunUsage;
  pendingToolCallIds: string[];
  followUpsFrom?: string;
  error?: AgentStepError;
  /** The model call ended the run as it stored the final reply: only the workflow's tag is left. */
  runEnded?: boolean;
  /**
   * Set with `requires_approval`: the reply whose calls wait, which of them, and the wait its model
   * call entered (none when a cancel ended the run first: the cancel is on its way).
   */
  pause?: { messageId: string; calls: StepCall[]; wait?: ApprovalWait };
}

export type StepActivities = ReturnType<typeof stepActivities>;

/**
 * Ending the run is a local activity, like the rest of the bookkeeping: as a regular one it would cost
 * every step a round trip through the server (bench/results.md). The stop
 * reason's search attribute is then stored with the workflow task that ran it, a few milliseconds
 * after the API may have answered: Temporal's visibility is eventually consistent anyway (with
 * Elasticsearch, by up to a second), and a pause was already marked that way.
 */
const FINISH_RUN_LOCALLY = 'finish-run-as-local-activity';

/**
 * Ends a request's run: the workflow is tagged with the stop reason, and the run marked stopped, even
 * while cancelling.
 */
export async function finishRequest(
  acts: StepActivities,
  agentId: string,
  runId: string,
  outcome: RequestOutcome,
): Promise<AgentStepResult> {
  const { stopReason, usage, error } = outcome;
  setCurrentDetails(`Stopped: ${stopReason}`);
  upsertSearchAttributes([{ key: stopReasonKey, value: stopReason }]);
  if (outcome.runEnded) return { stopReason, usage };
  const finisher = patched(FINISH_RUN_LOCALLY) ? acts.run : acts.runEndUnpatched;
  await CancellationScope.nonCancellable(() =>
    finisher.finishRun({
      agentId,
      runId,
      stopReason,
      usage,
      pendingToolCallIds: outcome.pendingToolCallIds,
      followUpsFrom: outcome.followUpsFrom,
      error,
    }),
  );
  return { stopReason, ...(error ? { error } : {}), usage };
}
