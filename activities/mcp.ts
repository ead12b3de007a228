/**
 * MCP tools, called on their servers: the activity of the `tools-mcp` task queue (or, with
 * LOCAL_TOOL_CALLS, a local activity of the agent worker); the server's progress notifications are its
 * heartbeats. A worker process keeps one connection per server
 * (src/mcp/client-pool.ts); only ids cross the workflow's history, never a server's credentials.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Database } from '../src/db';
import type { McpClientPool } from '../src/mcp/client-pool';
import { McpAuthError } from '../src/mcp/connection';
import { callMcpTool, serverGone } from '../src/mcp/tool-call';
import { toolTimeoutMs } from '../src/tools/tool-timeout';
import { heartbeatProgress } from './heartbeat';
import { toolCallActivity, type ToolExecutor } from './tool-call';
import type { McpActivities } from '../contracts/activities';

export interface McpActivityDeps {
  db: Database;
  pool: McpClientPool;
  /** How long one call may take unless the tool sets its own timeout. */
  callTimeoutMs: number;
}

/**
 * The tool's failure and its timeout are its result; a broken connection fails the activity, which
 * retries on a new one; credentials the server refuses fail it for good.
 */
export function mcpExecutor({ pool, callTimeoutMs }: Omit<McpActivityDeps, 'db'>): ToolExecutor {
  return {
    async execute({ tool, args, signal, mcpServer: server }) {
      if (!server) throw serverGone(tool);
      const options = {
        timeoutMs: toolTimeoutMs(tool) ?? callTimeoutMs,
        signal,
        onProgress: heartbeatProgress,
      };
      try {
        return await callMcpTool(pool, server, tool, args, options);
      } catch (error) {
        if (error instanceof McpAuthError)
          throw ApplicationFailure.nonRetryable(error.message, 'McpAuthError');
        throw error;
      }
    },
  };
}

export function mcpActivities(deps: McpActivityDeps) {
  return { runMcpTool: toolCallActivity(deps.db, mcpExecutor(deps)) } satisfies McpActivities;
}
