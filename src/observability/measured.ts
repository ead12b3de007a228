/** Model and tool calls measured where they run: in the worker process's activities. */
import { Context } from '@temporalio/activity';
import type {
  AgentMessageActivities,
  BuiltinActivities,
  McpActivities,
  RunCodeActivities,
  SandboxActivities,
} from '../../contracts/activities';
import type { ToolCallInput, ToolOutcome } from '../../contracts/payloads';
import { llmErrorType, ModelApiError, type ModelProvider } from '../llm/types';
import {
  modelCallDuration,
  modelCalls,
  modelTokens,
  secondsSince,
  toolCallDuration,
  toolCalls,
} from './metrics';

/** Letta's error type of a failed model call, or `cancelled` when its run was cancelled. */
function modelOutcome(error: unknown, signal?: AbortSignal): string {
  if (signal?.aborted) return 'cancelled';
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

type ToolActivityName = keyof (BuiltinActivities &
  AgentMessageActivities &
  RunCodeActivities &
  SandboxActivities &
  McpActivities);

/** The execution mode (workflows/tool-calls.ts's TOOL_MODES) whose calls each activity runs. */
const MODE_OF: Record<ToolActivityName | 'recordAgentReplies', string> = {
  runBuiltinTool: 'builtin',
  messageAgents: 'agent',
  // The step of an agent message's call that records it (workflows/agent-message-call.ts).
  recordAgentReplies: 'agent',
  runCode: 'code',
  runSandboxTool: 'sandbox',
  runMcpTool: 'mcp',
};

const outcomeOf = (outcome: ToolOutcome) => (outcome.waitsFor ? 'paused' : outcome.status);

/**
 * A tool call activity, each attempt counted and timed by its mode, tool and outcome: `failure` is an
 * attempt that failed (and is retried), not the tool's own error.
 */
export function measuredToolCall(
  run: (input: ToolCallInput) => Promise<ToolOutcome>,
): (input: ToolCallInput) => Promise<ToolOutcome> {
  return async (input) => {
    const activity = Context.current().info.activityType as keyof typeof MODE_OF;
    const labels = { mode: MODE_OF[activity] ?? activity, tool: input.toolName };
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
