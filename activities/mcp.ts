/**
 * MCP tools, called on their servers: a regular activity on the turn's task queue, or on `tools-mcp`
 * with a pool of its own (TOOL_WORKER_POOLS), or with LOCAL_TOOL_CALLS a local activity of the turn's
 * worker; the server's progress notifications and the
 * statuses of a call's task are its heartbeats. A worker process keeps one connection per server
 * (src/mcp/client-pool.ts); only ids cross the workflow's history, never a server's credentials.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Progress, Task } from '@modelcontextprotocol/sdk/types.js';
import type { Database } from '../src/db';
import type { McpClientPool } from '../src/mcp/client-pool';
import { McpAuthError, McpConnectionError } from '../src/mcp/connection';
import { answerMcpElicitation, callMcpTool, serverGone } from '../src/mcp/tool-call';
import { serverForAgent } from '../src/mcp/acting-identity';
import { recordElicitation } from '../src/db/mcp-elicitations';
import { mcpToolTimeoutMs } from '../src/tools/tool-timeout';
import { heartbeatProgress } from './heartbeat';
import { limitImages } from '../src/returns/return-parts';
import { toolCallActivity, type ToolExecutor } from './tool-call';
import { cancelledByPerson } from './interruption';
import type { McpActivities } from '../contracts/activities';
import { traceMcpCall } from '../src/observability/genai';

export interface McpActivityDeps {
  db: Database;
  pool: McpClientPool;
  /** How long one call may take unless the tool or its server sets its own timeout. */
  callTimeoutMs: number;
  /** The largest image a result gives the model (TOOL_RETURN_IMAGE_MAX_BYTES). */
  imageMaxBytes: number;
}

/**
 * What an MCP call's heartbeats carry (the Temporal UI shows them under the pending activity): the
 * call's task, once the server made one, and the server's last progress. Ids and the server's own
 * words only, never a credential.
 */
interface McpCallDetails {
  mcp_task?: { server_id: string; task_id: string; status: Task['status']; status_message?: string };
  progress?: Progress;
}

/** The task an earlier attempt of this call started on `serverId`, from its last heartbeat. */
function earlierTaskId(context: Context, serverId: string): string | undefined {
  const { heartbeatDetails } = context.info;
  const task = (heartbeatDetails as McpCallDetails | undefined)?.mcp_task;
  return task?.server_id === serverId && typeof task.task_id === 'string' ? task.task_id : undefined;
}

/** Heartbeats with each progress notification and task status, every one carrying the task's id. */
function callHeartbeats(serverId: string) {
  let details: McpCallDetails = {};
  const report = (more: McpCallDetails) => heartbeatProgress((details = { ...details, ...more }));
  return {
    onProgress: (progress: Progress) => report({ progress }),
    onTask: ({ taskId, status, statusMessage }: Task) =>
      report({
        mcp_task: {
          server_id: serverId,
          task_id: taskId,
          status,
          ...(statusMessage ? { status_message: statusMessage } : {}),
        },
      }),
  };
}

/**
 * The tool's failure and its timeout are its result; a broken connection fails the activity, which
 * retries on a new one, resuming the call's task if the server made one; credentials the server
 * refuses fail it for good. A server's elicitation pauses the call: what it asked is recorded, and the
 * activity ends without a result; once the elicitation is answered the call runs again and gives the
 * answer to the call it paused.
 */
export function mcpExecutor({ db, pool, callTimeoutMs, imageMaxBytes }: McpActivityDeps): ToolExecutor {
  return {
    // A server that could not be reached was never asked to run the tool.
    failedWithoutEffect: (error) => error instanceof McpConnectionError,
    // A task an interrupted attempt started is followed on, never started again.
    resumes: ({ mcpServer }) =>
      mcpServer !== undefined && earlierTaskId(Context.current(), mcpServer.id) !== undefined,
    async execute({ input, tool, args, signal, mcpServer, elicitation: asked }) {
      if (!mcpServer) throw serverGone(tool);
      const server = await serverForAgent(db, input.agentId, mcpServer);
      const context = Context.current();
      const options = {
        timeoutMs: mcpToolTimeoutMs(tool, server.config) ?? callTimeoutMs,
        signal,
        taskId: earlierTaskId(context, server.id),
        // Only the run's cancel ends the task: after a shutdown or a lost claim, a retry resumes it.
        abortCancelsTask: () => cancelledByPerson(context),
        // The idempotency key a server may use: the call's id, the same in every attempt.
        callId: input.toolCallId,
        ...callHeartbeats(server.id),
        elicitation: { pauseAs: input.toolCallId },
      };
      try {
        if (asked && !asked.answer) return { pausedFor: 'elicitation' };
        const outcome = asked?.answer
          ? await answerMcpElicitation(pool, server, tool, args, { ...asked, answer: asked.answer }, options)
          : await traceMcpCall(server.id, tool.name, () => callMcpTool(pool, server, tool, args, options));
        if (!('pending' in outcome)) return limitImages(outcome, imageMaxBytes);
        const { toolCallId } = input;
        await recordElicitation(db, { toolCallId, serverId: server.id, ...outcome.pending });
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
