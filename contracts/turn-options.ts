/**
 * The options of an agent turn's workflow, whoever starts it: the API, when its conversation is idle
 * (src/agent/turns.ts), or the conversation's session, when the turn is next in its queue
 * (workflows/agent-session.ts).
 */
import type { QueuedTurn } from './payloads';
import { agentIdKey, runIdKey } from './search-attributes';

export const turnWorkflowOptions = (turn: QueuedTurn) => ({
  workflowId: turn.workflowId,
  typedSearchAttributes: [
    { key: agentIdKey, value: turn.input.agentId },
    { key: runIdKey, value: turn.input.runId },
  ],
  staticSummary: turn.summary,
  staticDetails: turn.details,
  // A local tool call holds the turn's workflow task; the worker renews it at 80% of this timeout,
  // which is when a cancel reaches the call.
  workflowTaskTimeout: turn.input.limits.taskTimeoutMs,
});
