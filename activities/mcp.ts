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
import { answerMcpElicitation, callMcpTool, serverGone } from '../src/mcp/tool-call';
import { getElicitation, recordElicitation } from '../src/db/mcp-elicitations';
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
 * retries on a new one; credentials the server refuses fail it for good. A server's elicitation
 * pauses the call: what it asked is recorded, and the activity ends without a result; once the
 * elicitation is answered the call runs again and gives the answer to the call it paused.
 */
export function mcpExecutor({ db, pool, callTimeoutMs }: McpActivityDeps): ToolExecutor {
  return {
    async execute({ input, tool, args, signal, mcpServer: server }) {
      if (!server) throw serverGone(tool);
      const options = {
        timeoutMs: toolTimeoutMs(tool) ?? callTimeoutMs,
        signal,
        onProgress: heartbeatProgress,
        elicitation: { pauseAs: input.toolCallId },
      };
      try {
        const asked = await getElicitation(db, input.toolCallId);
        if (asked && !asked.answer) return { pausedFor: 'elicitation' };
        const outcome = asked?.answer
          ? await answerMcpElicitation(pool, server, tool, { ...asked, answer: asked.answer }, options)
          : await callMcpTool(pool, server, tool, args, options);
        if (!('pending' in outcome)) return outcome;
        const { params, session } = outcome.pending;
        await recordElicitation(db, { toolCallId: input.toolCallId, serverId: server.id, params, session });
        return { pausedFor: 'elicitation' };
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
