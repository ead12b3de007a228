/**
 * Tool calls a server runs as tasks (MCP 2025-11-25, experimental in the SDK): the call is answered at
 * once with a task, whose status is then asked for (`tasks/get`, at the interval the server suggests)
 * until it ends, and whose result is then read (`tasks/result`). A call given the id of a task it
 * started before (a retried activity) follows that task and never calls the tool again. Cancelling the
 * call, or its timeout, cancels the task (`tasks/cancel`).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ErrorCode,
  McpError,
  type CallToolResult,
  type Progress,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import { McpTimeoutError } from './connection';
import { callIdMeta } from './call-id';

/** A tool's `execution.taskSupport`, when it may run as a task. */
export type TaskSupport = 'required' | 'optional';

export interface McpTaskOptions {
  /** How long the whole call may take, from the tool's call (or its resumption) to its result. */
  timeoutMs: number;
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
  /**
   * Whether an abort of `signal` ends the call for good (its run was cancelled), so that its task is
   * cancelled too; when not (a worker shutting down, another attempt taking the call over), the task
   * is left for the attempt that resumes it. Unset: every abort cancels the task.
   */
  abortCancelsTask?: () => boolean;
  /** The task this call started before: followed, not started again. */
  taskId?: string;
  /** Called with the task as the server created it, and with each status it reports after. */
  onTask?: (task: Task) => void;
  /** How often the task's status is asked for when the server suggests no interval. */
  pollMs: number;
  /** The longest a `tasks/cancel` may take. */
  cancelTimeoutMs: number;
  /** The tool call's id, in the request's `_meta` (call-id.ts). */
  callId?: string;
}

/** 'required' always; 'optional' when the server says it runs tool calls as tasks. */
export function runsAsTask(client: Client, support: TaskSupport | undefined): boolean {
  if (support === 'required') return true;
  return support === 'optional' && Boolean(client.getServerCapabilities()?.tasks?.requests?.tools?.call);
}

const isTerminal = (status: Task['status']) =>
  status === 'completed' || status === 'failed' || status === 'cancelled';

/** An error result, as the model reads a tool's own failure. */
const errorResult = (text: string): CallToolResult => ({ content: [{ type: 'text', text }], isError: true });

/** The task's own words on how it ended, if it has any. */
const saying = (task: Task) => (task.statusMessage ? `: ${task.statusMessage}` : '');

/** The wait until the next status, cut short by an abort or the deadline. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      if (signal?.aborted) reject(signal.reason);
      else resolve();
    }
  });
}

/**
 * Calls the tool as a task (or resumes `options.taskId`) and gives its result. A task that fails
 * without a result, is cancelled or is no longer known to the server is an error result that says so;
 * a call past its timeout an McpTimeoutError, its task cancelled.
 */
export async function callToolAsTask(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  options: McpTaskOptions,
): Promise<CallToolResult> {
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  let taskId: string | undefined = options.taskId;
  try {
    if (!taskId) {
      const started = await startTask(client, name, args, { ...options, signal });
      if ('result' in started) return started.result; // the server ran it as a plain call
      taskId = started.task.taskId;
      options.onTask?.(started.task);
    }
    return await followTask(client, taskId, { ...options, signal });
  } catch (error) {
    if (!signal.aborted) throw error;
    const aborted = options.signal?.aborted;
    if (taskId && (!aborted || (options.abortCancelsTask?.() ?? true)))
      await cancelTask(client, taskId, options.cancelTimeoutMs);
    if (aborted) throw options.signal!.reason;
    const seconds = (options.timeoutMs / 1000).toFixed(1);
    const cancelled = taskId ? ' Its task was cancelled.' : '';
    throw new McpTimeoutError(`Executing tool ${name} timed out after ${seconds} seconds.${cancelled}`);
  }
}

/** `tools/call` with a task asked for: the task, or the result of a server that ran it at once. */
async function startTask(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  options: McpTaskOptions & { signal: AbortSignal },
): Promise<{ task: Task } | { result: CallToolResult }> {
  const answer = await client.request(
    { method: 'tools/call', params: { name, arguments: args, ...callIdMeta(options.callId) } },
    CreateTaskResultSchema.or(CallToolResultSchema),
    // The signal bounds it (the deadline is in it); the request's own timeout is no shorter.
    { task: {}, signal: options.signal, timeout: options.timeoutMs, onprogress: options.onProgress },
  );
  const created = CreateTaskResultSchema.safeParse(answer);
  return created.success ? { task: created.data.task } : { result: answer as CallToolResult };
}

/** The task's status until it ends, then its result. */
async function followTask(
  client: Client,
  taskId: string,
  options: McpTaskOptions & { signal: AbortSignal },
): Promise<CallToolResult> {
  const { signal, timeoutMs } = options;
  for (;;) {
    let task: Task;
    try {
      task = await client.experimental.tasks.getTask(taskId, { signal, timeout: timeoutMs });
    } catch (error) {
      if (error instanceof McpError && error.code === ErrorCode.InvalidParams && !signal.aborted)
        return errorResult(
          `The MCP server no longer knows task ${taskId} of this call (${error.message}); the tool is not called again, since it may have run.`,
        );
      throw error;
    }
    options.onTask?.(task);
    if (task.status === 'cancelled')
      return errorResult(`The MCP server cancelled the tool's task${saying(task)}`);
    // input_required: tasks/result delivers what the server asks (refused here) and waits for the end.
    if (isTerminal(task.status) || task.status === 'input_required') return resultOf(client, task, options);
    await pause(task.pollInterval ?? options.pollMs, signal);
  }
}

/** The ended task's result; a failed task without one is an error result with its status message. */
async function resultOf(
  client: Client,
  task: Task,
  { signal, timeoutMs }: McpTaskOptions & { signal: AbortSignal },
): Promise<CallToolResult> {
  try {
    // The signal bounds it: the server answers only once the task ends.
    const timing = { signal, timeout: timeoutMs };
    return await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, timing);
  } catch (error) {
    if (task.status !== 'failed' || signal.aborted) throw error;
    return errorResult(`The tool's task failed${saying(task)} (${(error as Error).message})`);
  }
}

/** Asks the server to cancel the task; one that ended or is gone meanwhile has nothing to cancel. */
async function cancelTask(client: Client, taskId: string, timeoutMs: number): Promise<void> {
  await client.experimental.tasks.cancelTask(taskId, { timeout: timeoutMs }).catch(() => undefined);
}
