/** The task queues, one per execution mode, so each can get its own worker pool (see DESIGN.md). */
export interface TaskQueues {
  agent: string;
  sandbox: string;
  mcp: string;
}

export function taskQueues(prefix: string): TaskQueues {
  return { agent: `${prefix}agent`, sandbox: `${prefix}tools-sandbox`, mcp: `${prefix}tools-mcp` };
}
