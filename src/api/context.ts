import type { Logger } from '../logger';
import type { ConfiguredSandbox, ToolSandboxes } from '../sandbox';
import type { McpClientPool } from '../mcp/client-pool';
import type { TurnServices } from '../agent/turns';
import type { RunEvents } from './run-events';
import type { ApprovalWakes } from '../approvals/inbox-events';
import type { ToolApiAccess } from '../access/tool-api-access';
import type { ServerStopping } from './stopping';
import type { ApiContextSettings } from './settings';

/** What route handlers work with: what turns need (the database, Temporal, the queues), and more. */
export interface ApiContext extends TurnServices {
  config: ApiContextSettings;
  /** Where `POST /v1/tools/run` runs source. */
  sandbox: ConfiguredSandbox;
  /** Where the agent tool run endpoint runs custom tools, as turns do. */
  toolSandboxes: ToolSandboxes;
  /** How custom tools run from the API reach it with their agent's token. */
  toolApi: ToolApiAccess;
  /** The API's own MCP connections (registering servers, the run endpoints). */
  mcp: McpClientPool;
  /** Wakes the followers of a run when the database says it changed. */
  runEvents: RunEvents;
  /** Wakes the approval inbox's streams when a pause is recorded or answered. */
  approvalWakes: ApprovalWakes;
  /** Whether the server is stopping: new turns are refused. */
  stopping: ServerStopping;
  log: Logger;
}
