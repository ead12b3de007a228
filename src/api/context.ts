import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Database } from '../db';
import type { Logger } from '../logger';
import type { ConfiguredSandbox } from '../sandbox';
import type { McpClientPool } from '../mcp/client-pool';
import type { TaskQueues } from '../temporal/task-queues';
import type { RunEvents } from './run-events';

/** What route handlers work with. */
export interface ApiContext {
  db: Database;
  config: Config;
  temporal: Client;
  /** Carried by task queues and workflow ids (src/db/deployment.ts). */
  deploymentId: string;
  /** Where agent-step workflows run (`agent`), custom tools (`sandbox`) and MCP tools (`mcp`), prefixed. */
  taskQueues: TaskQueues;
  /** Where `POST /v1/tools/run` and the agent tool run endpoint run custom tools. */
  sandbox: ConfiguredSandbox;
  /** The API's own MCP connections (registering servers, the run endpoints). */
  mcp: McpClientPool;
  /** Wakes the followers of a run when the database says it changed. */
  runEvents: RunEvents;
  log: Logger;
}
