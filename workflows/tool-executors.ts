/**
 * How a tool call runs, by its tool's execution mode: one row per mode in `EXECUTORS`, with the
 * activity that runs its calls (activities/builtin.ts, sandbox.ts, mcp.ts), the task queue it runs
 * on and how long a call may take. The agent step dispatches through this table; a new mode is an
 * executor on the activity side and a row here, and the step's loop does not change.
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  isCancellation,
  log,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  type ActivityOptions,
} from '@temporalio/workflow';
import type {
  AgentMessageActivities,
  BuiltinActivities,
  McpActivities,
  RunCodeActivities,
  SandboxActivities,
} from '../contracts/activities';
import type {
  AgentStepLimits,
  ClientTool,
  StepTool,
  ToolCallInput,
  ToolMode,
  ToolOutcome,
  StepCall,
} from '../contracts/payloads';

type ToolActivities = BuiltinActivities &
  AgentMessageActivities &
  RunCodeActivities &
  SandboxActivities &
  McpActivities;

/** The task queues of the modes whose workers can live apart from the agent's. */
export interface ToolQueues {
  sandbox: string;
  mcp: string;
}

interface ExecutorRow {
  /** What the Temporal UI shows after a call's tool name, e.g. `search (MCP)`. */
  label: string;
  /** The activity that runs the mode's calls; none when the client runs them: the step pauses for their returns. */
  activity?: keyof ToolActivities;
  /**
   * The task queue its calls run on, so a pool of its workers can live apart; the agent's own when
   * unset. With `localToolCalls` (the step's limits, LOCAL_TOOL_CALLS) they run as local activities of
   * the agent worker instead, which every worker process has these modes' activities for.
   */
  queue?: keyof ToolQueues;
  /** How long one call may take (the activity adds a margin): the step's tool timeout when unset. */
  timeoutMs?: (limits: AgentStepLimits, tool: StepTool) => number | undefined;
}

export const EXECUTORS: Partial<Record<ToolMode, ExecutorRow>> = {
  // Those that work on the database alone run as local activities (StepTool.local).
  builtin: { label: 'built-in', activity: 'runBuiltinTool' },
  // run_code: the model's own code, in the custom tools' sandbox.
  code: { label: 'sandbox', activity: 'runCode', queue: 'sandbox' },
  // A message to another agent, whose reply may take that agent's whole step.
  agent: {
    label: 'agent message',
    activity: 'messageAgents',
    timeoutMs: (limits) => limits.agentMessageTimeoutMs,
  },
  sandbox: {
    label: 'sandbox',
    activity: 'runSandboxTool',
    queue: 'sandbox',
    timeoutMs: (_, tool) => tool.timeoutMs,
  },
  // The call may first have to connect to its server.
  mcp: {
    label: 'MCP',
    activity: 'runMcpTool',
    queue: 'mcp',
    timeoutMs: (limits, tool) => (tool.timeoutMs ?? limits.mcpCallTimeoutMs) + limits.mcpConnectTimeoutMs,
  },
  client: { label: 'client-side' },
};

/** Whether a call of `tool` waits for its return from the client instead of running here. */
export function runsOnClient(tool: StepTool | undefined): boolean {
  const row = tool && EXECUTORS[tool.mode];
  return row !== undefined && !row.activity;
}

/**
 * The step's tools with the request's client tools: their calls run on the client, which returns
 * their results. A client tool stands for a server tool of its name.
 */
export function withClientTools(clientTools: ClientTool[], tools: StepTool[]): StepTool[] {
  const client = clientTools.map(({ name }): StepTool => ({
    id: name,
    name,
    mode: 'client',
    parallel: false,
    version: 0,
  }));
  return [...client, ...tools];
}

/**
 * A cancel waits for the call to stop (the provider's request aborted, the sandbox killed), so that
 * nothing of the run goes on once its cancel has answered.
 */
export const cancellationType = ActivityCancellationType.WAIT_CANCELLATION_COMPLETED;

/** A tool call's activity options: its timeout plus a margin, heartbeats, retries. */
function toolOptions(limits: AgentStepLimits, timeoutMs: number): ActivityOptions {
  return {
    cancellationType,
    startToCloseTimeout: timeoutMs + 10_000,
    heartbeatTimeout: limits.heartbeatTimeoutMs,
    // In ms: the SDK parses a duration's text again at every call it schedules.
    retry: { initialInterval: 1_000, backoffCoefficient: 2, maximumAttempts: limits.toolMaxAttempts },
  };
}

/** Runs one call through its mode's activity, as the Temporal UI names it by `summary`. */
export type ToolRunner = (call: ToolCallInput, tool: StepTool, summary: string) => Promise<ToolOutcome>;

/** Whether calls of `tool` run as local activities of the step's worker. */
const runsLocally = (limits: AgentStepLimits, tool: StepTool) =>
  tool.local || (limits.localToolCalls === true && EXECUTORS[tool.mode]?.queue !== undefined);

export function toolRunner(limits: AgentStepLimits, queues: ToolQueues): ToolRunner {
  const base = toolOptions(limits, limits.toolTimeoutMs);
  const remote = proxyActivities<ToolActivities>(base);
  const local = proxyLocalActivities<ToolActivities>({
    startToCloseTimeout: base.startToCloseTimeout,
    retry: base.retry,
  });
  return (call, tool, summary) => {
    const row = EXECUTORS[tool.mode]!;
    const activity = row.activity!;
    const options = toolOptions(limits, row.timeoutMs?.(limits, tool) ?? limits.toolTimeoutMs);
    if (runsLocally(limits, tool)) {
      const { startToCloseTimeout, retry } = options;
      return local[activity].executeWithOptions({ startToCloseTimeout, retry, cancellationType, summary }, [
        call,
      ]);
    }
    const taskQueue = row.queue && queues[row.queue];
    return remote[activity].executeWithOptions({ ...options, ...(taskQueue ? { taskQueue } : {}), summary }, [
      call,
    ]);
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
  if (parallel) return Promise.all(calls.map((call) => run(call)));
  const outcomes: ToolOutcome[] = [];
  for (const call of calls) outcomes.push(await run(call));
  return outcomes;
}

/** Longest failure text the model is given (Letta's MAX_ERROR_MESSAGE_CHAR_LIMIT). */
const MAX_FAILURE_CHARS = 1000;

/**
 * A tool's activity that failed for good, as Letta words an exception for the model. A regular
 * activity's failure wraps its cause; a local activity's is the cause itself.
 */
function failureText(toolName: string, failure: ActivityFailure | ApplicationFailure): string {
  const cause = failure instanceof ActivityFailure ? failure.cause : failure;
  const kind = cause instanceof ApplicationFailure && cause.type ? cause.type : (cause?.name ?? 'Error');
  return `Error executing function ${toolName}: ${kind}: ${cause?.message ?? failure.message}`.slice(
    0,
    MAX_FAILURE_CHARS,
  );
}

/**
 * Runs a call through the executor of its tool's mode; a call of a tool the step does not have, or of
 * a mode no activity runs, is refused with the error the model sees (`reject`). So is a call whose
 * activity failed after its retries (its MCP server died, its sandbox would not start): the model reads
 * the error and the step goes on, as Letta's loop goes on after a tool's exception.
 */
export async function dispatchToolCall(
  run: ToolRunner,
  call: Omit<ToolCallInput, 'toolId' | 'toolVersion'>,
  tool: StepTool | undefined,
  reject: (reason: string) => Promise<ToolOutcome>,
): Promise<ToolOutcome> {
  const row = tool && EXECUTORS[tool.mode];
  if (!tool || !row?.activity) {
    return reject(
      tool
        ? `Error executing function ${call.toolName}: NotImplementedError: tools of the ${tool.mode} execution mode cannot run on this server`
        : 'Tool not found',
    );
  }
  const summary = `${call.toolName} (${row.label})`;
  setCurrentDetails(`Running tool ${summary}`);
  try {
    return await run({ ...call, toolId: tool.id, toolVersion: tool.version }, tool, summary);
  } catch (error) {
    const failed = error instanceof ActivityFailure || error instanceof ApplicationFailure;
    if (isCancellation(error) || !failed) throw error;
    const text = failureText(call.toolName, error);
    log.warn('a tool call failed after its retries', { tool: call.toolName, error: text });
    return reject(text);
  }
}
