import type { Logger } from '../logger';
import type { ConfiguredSandbox } from '../sandbox';
import type { McpClientPool } from '../mcp/client-pool';
import type { StepServices } from '../agent/steps';
import type { RunEvents } from './run-events';

/** What route handlers work with: what steps need (the database, Temporal, the queues), and more. */
export interface ApiContext extends StepServices {
  /** Where `POST /v1/tools/run` and the agent tool run endpoint run custom tools. */
  sandbox: ConfiguredSandbox;
  /** The API's own MCP connections (registering servers, the run endpoints). */
  mcp: McpClientPool;
  /** Wakes the followers of a run when the database says it changed. */
  runEvents: RunEvents;
  log: Logger;
}
