/** The task queues, one per execution mode, so each can get its own worker pool. */
export interface TaskQueues {
  agent: string;
  sandbox: string;
  mcp: string;
}

/**
 * Queue names carry the deployment's id (kept in its database, see src/db/deployment.ts): workers of
 * another deployment on the same namespace poll other queues, and never run this one's turns against
 * their database. Replicas of one deployment share its queues.
 */
export function taskQueues(prefix: string, deploymentId: string): TaskQueues {
  const name = (mode: string) => `${prefix}${deploymentId ? `${deploymentId}.` : ''}${mode}`;
  return { agent: name('agent'), sandbox: name('tools-sandbox'), mcp: name('tools-mcp') };
}
