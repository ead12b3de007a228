/**
 * MCP tools, called on their servers: the activity of the `tools-mcp` task queue. Its worker keeps one
 * connection per server (src/mcp/client-pool.ts); only ids cross the workflow's history, never a
 * server's credentials.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Database } from '../src/db';
import { getAgentRow } from '../src/db/agents';
import { findToolExecution } from '../src/db/tool-executions';
import type { McpClientPool } from '../src/mcp/client-pool';
import { McpAuthError } from '../src/mcp/connection';
import { callMcpTool, serverOfTool, type McpToolResult } from '../src/mcp/tool-call';
import type { McpServerRow } from '../src/db/mcp-servers';
import { toolTimeoutMs } from '../src/tools/tool-timeout';
import { ToolError } from '../src/tools/tool-error';
import type { StoredToolCallInput, ToolOutcome } from './contracts';
import { withHeartbeats } from './heartbeat';
import { outcomeOf, recordResult, toolCallArguments, toolAtVersion } from './tool-results';

export interface McpActivityDeps {
  db: Database;
  pool: McpClientPool;
  /** How long one call may take unless the tool sets its own timeout. */
  callTimeoutMs: number;
}

export function mcpActivities({ db, pool, callTimeoutMs }: McpActivityDeps) {
  return {
    /**
     * Calls an MCP tool once per tool call id, at the version the step resolved. The tool's failure and
     * its timeout are its result; a broken connection fails the activity, which retries on a new one;
     * credentials the server refuses fail it for good.
     */
    async runMcpTool(input: StoredToolCallInput): Promise<ToolOutcome> {
      const done = await findToolExecution(db, input.toolCallId);
      if (done) return outcomeOf(done);
      const agent = await getAgentRow(db, input.agentId);
      if (!agent) throw new Error(`agent ${input.agentId} no longer exists`);
      const tool = await toolAtVersion(db, input);
      if (!tool) return recordResult(db, input, agent, tool, { status: 'error', text: 'Tool not found' });
      let server: McpServerRow;
      let args: Record<string, unknown>;
      try {
        server = await serverOfTool(db, tool);
        args = await toolCallArguments(db, input);
      } catch (error) {
        if (!(error instanceof ToolError)) throw error;
        return recordResult(db, input, agent, tool, { status: 'error', text: error.message });
      }
      const context = Context.current();
      const options = {
        timeoutMs: toolTimeoutMs(tool) ?? callTimeoutMs,
        signal: context.cancellationSignal,
        onProgress: (progress: unknown) => context.heartbeat(progress),
      };
      let result: McpToolResult;
      try {
        result = await withHeartbeats(callMcpTool(pool, server, tool, args, options));
      } catch (error) {
        if (error instanceof McpAuthError)
          throw ApplicationFailure.nonRetryable(error.message, 'McpAuthError');
        throw error;
      }
      return recordResult(db, input, agent, tool, result);
    },
  };
}
