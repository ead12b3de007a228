/**
 * Workflow interceptors (bundled with the workflows, before Temporal's OpenTelemetry ones): a turn a
 * session starts belongs to the trace of the request that queued it, not to the session's first; and
 * the workflow logger's lines name the agent and run. Neither issues a command: replay is unchanged.
 */
import { context, type Context } from '@opentelemetry/api';
import { extractContextFromHeaders } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import type { WorkflowInterceptors } from '@temporalio/workflow';

const text = (value: unknown, key: string): string | undefined => {
  const field = value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
  return typeof field === 'string' ? field : undefined;
};

export const interceptors = (): WorkflowInterceptors => {
  let logIds: Record<string, string | undefined> = {};
  /** The trace each queued turn came with, by the turn's workflow id, until the turn starts. */
  const queuedIn = new Map<string, Context>();
  return {
    inbound: [
      {
        execute(input, next) {
          const [first] = input.args;
          logIds = { agent_id: text(first, 'agentId'), run_id: text(first, 'runId') };
          return next(input);
        },
        handleUpdate(input, next) {
          const turnWorkflowId = text(input.args[0], 'workflowId');
          const queuedFrom = extractContextFromHeaders(input.headers);
          if (turnWorkflowId && queuedFrom) queuedIn.set(turnWorkflowId, queuedFrom);
          return next(input);
        },
      },
    ],
    outbound: [
      {
        startChildWorkflowExecution(input, next) {
          const queuedFrom = queuedIn.get(input.options.workflowId);
          if (!queuedFrom) return next(input);
          queuedIn.delete(input.options.workflowId);
          return context.with(queuedFrom, () => next(input));
        },
        getLogAttributes(input, next) {
          return next({ ...logIds, ...input });
        },
      },
    ],
  };
};
