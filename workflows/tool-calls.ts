/**
 * How a tool call runs, by its tool's execution mode: one row per mode in `TOOL_MODES`, with how long a
 * call may take and how it is retried; the mode's activity (activities/builtin.ts, sandbox.ts, mcp.ts,
 * ...) and task queue are its entry in contracts/tool-modes.ts. The turn runs every call through
 * `runToolCall`; a new mode is an entry there, which the compiler then asks a row of here for
 * (docs/design.md, "Adding a mode"), and the turn's loop does not change.
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  ChildWorkflowFailure,
  executeChild,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  type ActivityOptions,
  type RetryPolicy,
} from '@temporalio/workflow';
import type { ToolCallActivities } from '../contracts/activities';
import type {
  AgentTurnLimits,
  ClientTool,
  TurnTool,
  ToolCallInput,
  ToolOutcome,
} from '../contracts/payloads';
import {
  EXECUTION_MODES,
  isServerMode,
  type ServerToolMode,
  type ToolMode,
  type ToolQueueName,
} from '../contracts/tool-modes';
import { throughInterruptions } from './interrupted-activities';
import type { Workflows } from '../contracts/workflows';
import { agentIdKey, runIdKey } from '../contracts/search-attributes';

/** The task queues of the modes whose workers can live apart from the agent's. */
export type ToolQueues = Record<ToolQueueName, string>;

/** How the turn runs a call of a mode this server runs; its activity and queue are the mode's own. */
interface ServerModeRow {
  /** What the Temporal UI shows after a call's tool name, e.g. `search (MCP)`. */
  label: string;
  /**
   * The child workflow that runs each call instead, when its calls wait on other workflows: it waits
   * as a workflow does, holding no activity slot. Histories without its `patch` ran the activity, and
   * replay so, as do turns in flight across the upgrade.
   */
  workflow?: { type: 'agentMessageCall'; patch: string };
  /** How long one call may take (the activity adds a margin). */
  timeoutMs: (limits: AgentTurnLimits, tool: TurnTool) => number;
  /** How a failed attempt is tried again. */
  retry: (limits: AgentTurnLimits) => RetryPolicy;
}

/** The client runs the calls: the turn pauses for their returns. */
interface ClientModeRow {
  label: string;
}

type ToolModeRow<M extends ToolMode> = M extends ServerToolMode ? ServerModeRow : ClientModeRow;

/** The turn's tool timeout, unless the tool has its own. */
const toolTimeout = (limits: AgentTurnLimits, tool: TurnTool) => tool.timeoutMs ?? limits.toolTimeoutMs;

/** In ms: the SDK parses a duration's text again at every call it schedules. */
const toolRetry = (limits: AgentTurnLimits): RetryPolicy => ({
  initialInterval: 1_000,
  backoffCoefficient: 2,
  maximumAttempts: limits.toolMaxAttempts,
});

/**
 * One row per execution mode, every mode (contracts/tool-modes.ts): its activity and task queue are
 * the mode's there; a call runs as a local activity of the agent worker when its tool is `local`, or
 * with `localToolCalls` (the turn's limits, LOCAL_TOOL_CALLS), which every worker process has the
 * activities for.
 */
export const TOOL_MODES: { [M in ToolMode]: ToolModeRow<M> } = {
  // Those that work on the database alone run as local activities (TurnTool.local).
  builtin: { label: 'built-in', timeoutMs: (limits) => limits.toolTimeoutMs, retry: toolRetry },
  code: { label: 'sandbox', timeoutMs: (limits) => limits.toolTimeoutMs, retry: toolRetry },
  // A message to another agent, whose reply may take that agent's whole turn.
  agent: {
    label: 'agent message',
    workflow: { type: 'agentMessageCall', patch: 'agent-message-call-workflow' },
    timeoutMs: (limits) => limits.agentMessageTimeoutMs,
    retry: toolRetry,
  },
  sandbox: { label: 'sandbox', timeoutMs: toolTimeout, retry: toolRetry },
  // The call may first have to connect to its server.
  mcp: {
    label: 'MCP',
    timeoutMs: (limits, tool) => (tool.timeoutMs ?? limits.mcpCallTimeoutMs) + limits.mcpConnectTimeoutMs,
    retry: toolRetry,
  },
  client: { label: 'client-side' },
};

/**
 * A mode's row when this server runs its calls, with its activity and task queue; none for the
 * client's, or for a mode this build lacks (a turn's tools stored by a newer build during a deploy).
 */
function serverRow(mode: ToolMode) {
  if (!isServerMode(mode)) return undefined;
  const row = TOOL_MODES[mode];
  const { activity, queue } = EXECUTION_MODES[mode];
  return { ...row, activity, queue };
}

/**
 * The turn's tools with the request's client tools: their calls run on the client, which returns
 * their results. A client tool stands for a server tool of its name.
 */
export function withClientTools(clientTools: ClientTool[], tools: TurnTool[]): TurnTool[] {
  const client = clientTools.map(({ name }): TurnTool => ({
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
export function toolOptions(
  limits: AgentTurnLimits,
  timeoutMs: number,
  retry: RetryPolicy = toolRetry(limits),
): ActivityOptions {
  return {
    cancellationType,
    startToCloseTimeout: timeoutMs + 10_000,
    heartbeatTimeout: limits.heartbeatTimeoutMs,
    retry,
  };
}

/** Longest failure text the model is given (Letta's MAX_ERROR_MESSAGE_CHAR_LIMIT). */
const MAX_FAILURE_CHARS = 1000;

type ServerRow = NonNullable<ReturnType<typeof serverRow>>;

type CallFailure = ActivityFailure | ApplicationFailure | ChildWorkflowFailure;

/**
 * A tool's activity (or child workflow) that failed for good, as Letta words an exception for the
 * model. A regular activity's failure wraps its cause, a child's the failure of its activity; a local
 * activity's is the cause itself.
 */
function failureText(toolName: string, failure: CallFailure): string {
  const child = failure instanceof ChildWorkflowFailure ? (failure.cause ?? failure) : failure;
  const cause = child instanceof ActivityFailure ? child.cause : child;
  const kind = cause instanceof ApplicationFailure && cause.type ? cause.type : (cause?.name ?? 'Error');
  return `Error executing function ${toolName}: ${kind}: ${cause?.message ?? failure.message}`.slice(
    0,
    MAX_FAILURE_CHARS,
  );
}

/** Whether calls of `tool` run as local activities of the turn's worker. */
const runsLocally = (limits: AgentTurnLimits, tool: TurnTool, queue: string) =>
  tool.local || (limits.localToolCalls === true && queue !== 'agent');

/** A call as the turn asks for it: the tool it names is resolved here. */
export type ToolCallRequest = Omit<ToolCallInput, 'toolId' | 'toolVersion'>;

/**
 * The turn's way to run one tool call: `runToolCall` schedules the activity of the call's execution
 * mode (its row in TOOL_MODES: task queue, timeout, local or not), named in the Temporal UI by the
 * tool and its mode. A call of a tool the turn does not have, or of a mode no activity runs, is
 * refused with the error the model sees (`refuse`, which records it). So is a call whose activity
 * failed after its retries (its MCP server died, its sandbox would not start): the model reads the
 * error and the turn goes on, as Letta's loop goes on after a tool's exception. A mode whose calls run
 * as child workflows names each `<turnId>/<tool call id>` (`turnId`: AgentTurnInput.workflowId).
 */
export function toolCaller(
  limits: AgentTurnLimits,
  queues: ToolQueues,
  refuse: (call: ToolCallRequest, reason: string) => Promise<ToolOutcome>,
  turnId?: string,
) {
  const base = toolOptions(limits, limits.toolTimeoutMs);
  const remote = proxyActivities<ToolCallActivities>(base);
  const local = proxyLocalActivities<ToolCallActivities>({
    startToCloseTimeout: base.startToCloseTimeout,
    retry: base.retry,
  });
  const schedule = (row: ServerRow, tool: TurnTool, input: ToolCallInput, summary: string) => {
    const { activity } = row;
    const options = toolOptions(limits, row.timeoutMs(limits, tool), row.retry(limits));
    if (runsLocally(limits, tool, row.queue)) {
      const { startToCloseTimeout, retry } = options;
      return local[activity].executeWithOptions({ startToCloseTimeout, retry, cancellationType, summary }, [
        input,
      ]);
    }
    const taskQueue = row.queue === 'agent' ? undefined : queues[row.queue];
    return throughInterruptions(limits.maxInterruptions, () =>
      remote[activity].executeWithOptions({ ...options, ...(taskQueue ? { taskQueue } : {}), summary }, [
        input,
      ]),
    );
  };
  /** The call as a child workflow of the turn (`<turn's id>/<tool call id>`), listed with its agent and run. */
  const runChild = (type: 'agentMessageCall', input: ToolCallInput, summary: string) =>
    executeChild<Workflows[typeof type]>(type, {
      workflowId: `${turnId ?? `${input.agentId}/${input.runId}`}/${input.toolCallId}`,
      args: [{ call: input, limits }],
      staticSummary: summary,
      typedSearchAttributes: [
        { key: agentIdKey, value: input.agentId },
        { key: runIdKey, value: input.runId },
      ],
    });

  return async function runToolCall(call: ToolCallRequest, tool: TurnTool | undefined): Promise<ToolOutcome> {
    const row = tool && serverRow(tool.mode);
    if (!tool || !row) {
      return refuse(
        call,
        tool
          ? `Error executing function ${call.toolName}: NotImplementedError: tools of the ${tool.mode} execution mode cannot run on this server`
          : 'Tool not found',
      );
    }
    const summary = `${call.toolName} (${row.label})`;
    setCurrentDetails(`Running tool ${summary}`);
    const input = { ...call, toolId: tool.id, toolVersion: tool.version };
    try {
      if (row.workflow && patched(row.workflow.patch))
        return await runChild(row.workflow.type, input, summary);
      return await schedule(row, tool, input, summary);
    } catch (error) {
      const failed =
        error instanceof ActivityFailure ||
        error instanceof ApplicationFailure ||
        error instanceof ChildWorkflowFailure;
      if (isCancellation(error) || !failed) throw error;
      const text = failureText(call.toolName, error);
      log.warn('a tool call failed after its retries', { tool: call.toolName, error: text });
      return refuse(call, text);
    }
  };
}

export type ToolCaller = ReturnType<typeof toolCaller>;
