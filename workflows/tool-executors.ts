/**
 * How a tool call runs, by its tool's execution mode: one executor per mode, each with its activity,
 * task queue, timeouts and retry policy, in one table the agent step dispatches through. A new mode is
 * an executor here and a row in `toolExecutors`; the step's loop does not change. (Client-side tools
 * never run on the server: the step pauses for them, workflows/agent-step.ts.)
 */
import {
  ActivityCancellationType,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { sandboxActivities } from '../activities/sandbox';
import type { mcpActivities } from '../activities/mcp';
import type {
  StoredToolCallInput,
  StepTool,
  ToolCallInput,
  ToolMode,
  ToolOutcome,
  StepCall,
} from '../activities/contracts';
import type { AgentStepLimits } from './messages';

/** Runs calls of one execution mode. */
export interface ToolExecutor {
  /** What the Temporal UI shows after a call's tool name, e.g. `search (MCP)`. */
  label: string;
  /** Runs one call, as an activity the Temporal UI names by `summary`. */
  run(call: ToolCallInput, tool: StepTool, summary: string): Promise<ToolOutcome>;
}

/** The modes that run on the server, each with its executor. */
export type ToolExecutors = Partial<Record<ToolMode, ToolExecutor>>;

/**
 * A cancel waits for the call to stop (the provider's request aborted, the sandbox killed), so that
 * nothing of the run goes on once its cancel has answered.
 */
export const cancellationType = ActivityCancellationType.WAIT_CANCELLATION_COMPLETED;

/** A tool call's activity options: the step's tool timeout (or the tool's own), plus a margin. */
export function toolOptions(limits: AgentStepLimits, timeoutMs?: number): ActivityOptions {
  return {
    cancellationType,
    startToCloseTimeout: (timeoutMs ?? limits.toolTimeoutMs) + 10_000,
    heartbeatTimeout: limits.heartbeatTimeoutMs,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: limits.toolMaxAttempts },
  };
}

type Activities = ReturnType<typeof createActivities>;
type SandboxActivities = ReturnType<typeof sandboxActivities>;
type McpActivities = ReturnType<typeof mcpActivities>;

const storedCall = (call: ToolCallInput, tool: StepTool): StoredToolCallInput => ({
  ...call,
  toolId: tool.id,
  toolVersion: tool.version,
});

/**
 * The executors of the server-side modes. Built-in tools that work on the database alone run as local
 * activities, in the workflow task that asks for them: milliseconds instead of a round trip through the
 * server; the others, and every tool that leaves the process, are regular activities that heartbeat
 * and may run on task queues of their own.
 */
export function toolExecutors(
  limits: AgentStepLimits,
  queues: { sandbox: string; mcp: string },
): ToolExecutors {
  const options = toolOptions(limits);
  const localOptions: LocalActivityOptions = {
    startToCloseTimeout: options.startToCloseTimeout,
    retry: options.retry,
  };
  const builtin = proxyActivities<Activities>(options).runBuiltinTool;
  const localBuiltin = proxyLocalActivities<Activities>(localOptions).runBuiltinTool;
  const sandbox = proxyActivities<SandboxActivities>({
    ...options,
    taskQueue: queues.sandbox,
  }).runSandboxTool;
  const mcp = proxyActivities<McpActivities>({ ...options, taskQueue: queues.mcp }).runMcpTool;
  return {
    builtin: {
      label: 'built-in',
      run: (call, tool, summary) =>
        tool.local
          ? localBuiltin.executeWithOptions({ ...localOptions, summary }, [call])
          : builtin.executeWithOptions({ ...options, summary }, [call]),
    },
    sandbox: {
      label: 'sandbox',
      run: (call, tool, summary) =>
        sandbox.executeWithOptions(
          { ...toolOptions(limits, tool.timeoutMs), taskQueue: queues.sandbox, summary },
          [storedCall(call, tool)],
        ),
    },
    mcp: {
      label: 'MCP',
      // The call may first have to connect to its server.
      run: (call, tool, summary) =>
        mcp.executeWithOptions(
          {
            ...toolOptions(limits, (tool.timeoutMs ?? limits.mcpCallTimeoutMs) + limits.mcpConnectTimeoutMs),
            taskQueue: queues.mcp,
            summary,
          },
          [storedCall(call, tool)],
        ),
    },
  };
}

/**
 * Runs calls of one reply: concurrently when every one of them allows parallel execution, otherwise in
 * order. Outcomes keep the calls' order.
 */
export async function runToolCalls(
  calls: StepCall[],
  tools: StepTool[],
  run: (call: StepCall) => Promise<ToolOutcome>,
): Promise<ToolOutcome[]> {
  const parallel =
    calls.length > 1 && calls.every((call) => tools.find((t) => t.name === call.name)?.parallel === true);
  if (parallel) return Promise.all(calls.map(run));
  const outcomes: ToolOutcome[] = [];
  for (const call of calls) outcomes.push(await run(call));
  return outcomes;
}

/**
 * Runs a call through the executor of its tool's mode; a call of a tool the step does not have, or of
 * a mode no executor runs here, is refused with the error the model sees (`reject`).
 */
export function dispatchToolCall(
  executors: ToolExecutors,
  call: ToolCallInput,
  tool: StepTool | undefined,
  reject: (reason: string) => Promise<ToolOutcome>,
): Promise<ToolOutcome> {
  const executor = tool && executors[tool.mode];
  if (!executor) {
    return reject(
      tool
        ? `Error executing function ${call.toolName}: NotImplementedError: tools of the ${tool.mode} execution mode cannot run on this server yet`
        : 'Tool not found',
    );
  }
  const summary = `${call.toolName} (${executor.label})`;
  setCurrentDetails(`Running tool ${summary}`);
  return executor.run(call, tool, summary);
}
