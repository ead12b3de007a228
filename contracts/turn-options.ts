/**
 * The options of an agent step's workflow, whoever starts it: the API, when its conversation is idle
 * (src/agent/turns.ts), or the conversation's session, when the step's turn comes (workflows/agent-session.ts).
 */
import type { QueuedTurn } from './payloads';
import { agentIdKey, runIdKey } from './search-attributes';

export const turnWorkflowOptions = (step: QueuedTurn) => ({
  workflowId: step.workflowId,
  typedSearchAttributes: [
    { key: agentIdKey, value: step.input.agentId },
    { key: runIdKey, value: step.input.runId },
  ],
  staticSummary: step.summary,
  staticDetails: step.details,
  // A local tool call holds the step's workflow task; the worker renews it at 80% of this timeout,
  // which is when a cancel reaches the call.
  workflowTaskTimeout: step.input.limits.taskTimeoutMs,
});
