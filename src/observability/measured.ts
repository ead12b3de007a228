/** Model and tool calls measured where they run: in the worker process's activities. */
import { Context } from '@temporalio/activity';
import { modeOfActivity } from '../../contracts/tool-modes';
import type { ToolCallInput, ToolOutcome } from '../../contracts/payloads';
import { llmErrorType, ModelApiError, type ModelProvider } from '../llm/types';
import {
  modelCallDuration,
  modelCalls,
  modelTokens,
  secondsSince,
  toolCallDuration,
  toolCallTakeovers,
  toolCalls,
} from './metrics';
import { trace } from '@opentelemetry/api';

/** Whether the model call running now was stopped by a person's cancel of its run. */
function cancelledByPerson(): boolean {
  try {
    return Context.current().cancellationDetails?.cancelRequested === true;
  } catch {
    return true; // outside an activity, only its caller aborts it
  }
}

/**
 * Letta's error type of a failed model call; `cancelled` when its run was cancelled, `interrupted` when
 * stopped otherwise (its worker shut down past its grace: it is retried).
 */
function modelOutcome(error: unknown, signal?: AbortSignal): string {
  if (signal?.aborted) return cancelledByPerson() ? 'cancelled' : 'interrupted';
  return error instanceof ModelApiError ? llmErrorType(error) : 'llm_error';
}

/** The providers of `registry`, each model call counted and timed, with its tokens. */
export function measuredProviders(
  registry: (provider: string) => ModelProvider,
): (provider: string) => ModelProvider {
  return (provider) => {
    const inner = registry(provider);
    return {
      ...inner,
      async complete(request, signal, onDelta) {
        const labels = { provider, model: request.model };
        const started = process.hrtime.bigint();
        try {
          const reply = await inner.complete(request, signal, onDelta);
          modelCalls.inc({ ...labels, outcome: 'ok' });
          modelTokens.inc({ ...labels, direction: 'input' }, reply.usage.promptTokens);
          modelTokens.inc({ ...labels, direction: 'output' }, reply.usage.completionTokens);
          return reply;
        } catch (error) {
          modelCalls.inc({ ...labels, outcome: modelOutcome(error, signal) });
          throw error;
        } finally {
          modelCallDuration.observe(labels, secondsSince(started));
        }
      },
    };
  };
}

/** The execution mode (contracts/tool-modes.ts) whose calls an activity runs. */
const modeOf = (activity: string): string | undefined =>
  // The step of an agent message's call that records it (workflows/agent-message-call.ts).
  activity === 'recordAgentReplies' ? 'agent' : modeOfActivity(activity);

/** The execution mode of the tool call activity running now. */
const currentMode = () => {
  const activity = Context.current().info.activityType;
  return modeOf(activity) ?? activity;
};

/** What a call that took over an interrupted attempt did (activities/tool-call.ts). */
export type TakeoverAction = 'rerun' | 'resumed' | 'refused';

/**
 * A takeover, counted by mode and action, and marked on the call's span (the activity's, in the run's
 * trace) with the attempt it took over from.
 */
export function observeTakeover(action: TakeoverAction, takenFrom: string): void {
  toolCallTakeovers.inc({ mode: currentMode(), action });
  const span = trace.getActiveSpan();
  span?.setAttribute('letta.tool_call.takeover', action);
  span?.addEvent('tool call taken over', {
    'letta.tool_call.takeover': action,
    'letta.tool_call.taken_from': takenFrom,
  });
}

const outcomeOf = (outcome: ToolOutcome) => (outcome.waitsFor ? 'paused' : outcome.status);

/**
 * A tool call activity, each attempt counted and timed by its mode, tool and outcome: `failure` is an
 * attempt that failed (and is retried), not the tool's own error.
 */
export function measuredToolCall(
  run: (input: ToolCallInput) => Promise<ToolOutcome>,
): (input: ToolCallInput) => Promise<ToolOutcome> {
  return async (input) => {
    const labels = { mode: currentMode(), tool: input.toolName };
    const started = process.hrtime.bigint();
    let outcome = 'failure';
    try {
      const result = await run(input);
      outcome = outcomeOf(result);
      return result;
    } finally {
      toolCalls.inc({ ...labels, outcome });
      toolCallDuration.observe(labels, secondsSince(started));
    }
  };
}
