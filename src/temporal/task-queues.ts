import type { TaskQueueName, ToolQueueName } from '../../contracts/tool-modes';

/** The task queues by name: the agent's, and each execution mode's whose workers can live apart. */
export type TaskQueues = Record<TaskQueueName, string>;

/** Each task queue's name after the deployment's prefix: a mode given a queue of its own names it here. */
const QUEUE_NAMES: TaskQueues = { agent: 'agent', sandbox: 'tools-sandbox', mcp: 'tools-mcp' };

/**
 * Queue names carry the deployment's id (kept in its database, see src/db/deployment.ts): workers of
 * another deployment on the same namespace poll other queues, and never run this one's turns against
 * their database. Replicas of one deployment share its queues.
 */
export function taskQueues(prefix: string, deploymentId: string): TaskQueues {
  const name = (queue: string) => `${prefix}${deploymentId ? `${deploymentId}.` : ''}${queue}`;
  const names = Object.entries(QUEUE_NAMES).map(([queue, suffix]) => [queue, name(suffix)]);
  return Object.fromEntries(names) as TaskQueues;
}

/**
 * The task queue each tool queue's calls are scheduled on, as a turn's input names them: a mode with a
 * pool of its own (TOOL_WORKER_POOLS) on its queue; any other on the turn's own, where the worker that
 * runs the turn takes the call in the answer to the workflow task that scheduled it (Temporal's eager
 * activity dispatch applies to an activity of the workflow's own queue only).
 */
export function toolCallQueues(
  queues: TaskQueues,
  pools: readonly ToolQueueName[],
): Record<ToolQueueName, string> {
  const queueOf = (queue: ToolQueueName) => (pools.includes(queue) ? queues[queue] : queues.agent);
  return { sandbox: queueOf('sandbox'), mcp: queueOf('mcp') };
}
