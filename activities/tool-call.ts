/**
 * One tool call, whatever its execution mode: what it needs is read once, its mode's executor runs it,
 * its result is recorded once. A call passes through three functions, one per layer: the turn's
 * `runToolCall` (workflows/tool-calls.ts: its mode's task queue, timeout and retries) schedules the
 * mode's activity, which `toolCallActivity` here makes (read, claim, record), which runs the mode's
 * `ToolExecutor.execute` (activities/builtin.ts, run-code.ts, agent-messages.ts, sandbox.ts, mcp.ts).
 */
import { Context } from '@temporalio/activity';
import type { Database, Queryable } from '../src/db';
import type { AgentRow, MemoryBlock, ToolRow } from '../src/db/rows';
import type { McpServerRow } from '../src/db/mcp-servers';
import type { McpElicitationRow } from '../src/db/mcp-elicitations';
import { readToolCall, type SandboxContext, type ToolCallRead } from '../src/db/tool-calls';
import { abandonClaim, releaseClaim, type ClaimHolder } from '../src/db/tool-claims';
import {
  findToolExecution,
  recordToolExecution,
  StaleBlockError,
  type BlockValueWrite,
  type ToolExecution,
} from '../src/db/tool-executions';
import { agentLockOnly } from '../src/db/agents';
import {
  DEFAULT_RETURN_CHAR_LIMIT,
  friendlyError,
  packageFunctionResponse,
  truncateReturn,
  unpackageFunctionResponse,
} from '../src/returns/tool-returns';
import { stripOptionalNulls } from '../src/schemas/strict-mode';
import type { ReturnPart } from '../src/returns/return-parts';
import { ToolError } from '../src/returns/tool-error';
import { SHORT_OUTPUT_CHARS, type ToolCallInput, type ToolOutcome } from '../contracts/payloads';
import { claimHolder, holdingClaim, readClaimed } from './tool-claim';
import { attemptInterrupted, interruption } from './interruption';
import { runsAgainAfterInterruption } from '../src/tools/retry-policy';
import { measuredToolCall, observeTakeover, type TakeoverAction } from '../src/observability/measured';

/** A call as its executor gets it. */
export interface ToolCall {
  input: ToolCallInput;
  agent: AgentRow;
  tool: ToolRow;
  /** The model's arguments without `request_heartbeat`, rule-fixed ones on top, strict-mode nulls dropped. */
  args: Record<string, unknown>;
  /** Aborted when the run is cancelled or the call's claim is lost: the executor stops the tool. */
  signal: AbortSignal;
  /** An MCP tool's server, read with the call; none when it is no longer registered. */
  mcpServer?: McpServerRow;
  /** What the MCP server asked when it paused this call, read with it; none when it never did. */
  elicitation?: McpElicitationRow;
  /**
   * The agent's blocks, read with the call: a memory tool's to plan its edit from (none when they
   * changed before its write: it plans again under the lock), a sandboxed tool's for its `agent_state`.
   */
  blocks?: MemoryBlock[];
  /** A sandboxed tool's: the agent's secrets and the sandbox configs, read with the call. */
  sandbox?: SandboxContext;
}

export interface ToolResult {
  status: 'success' | 'error';
  text: string;
  /** The return as Letta's return parts, when it holds an image: `text` is then its text form. */
  parts?: ReturnPart[];
  /** The whole return's length, when `text` is only its head (the sandbox cut it at the tool's limit). */
  length?: number;
  stdout?: string[] | null;
  stderr?: string[] | null;
  /** Kept whole: the tool pages through its results itself. */
  untruncated?: boolean;
  /**
   * A memory edit's block value, written by the statement that records the call if the block still
   * holds the value it was planned from.
   */
  write?: BlockValueWrite;
}

/**
 * The effect of a call that writes memory: applied in the transaction that records the result, under
 * the agent's memory lock, and only if no other attempt recorded it first, so it is never applied twice.
 * It must use `tx` alone: a second connection could wait on a pool that transactions like it hold.
 */
export interface MemoryWrite {
  writeMemory(tx: Queryable): Promise<ToolResult>;
}

/**
 * A call that waits before it can end: its MCP server asked the user something (src/mcp/elicited-calls.ts).
 * Nothing is recorded; the turn pauses, and runs the call again with the answer.
 */
export interface ToolPause {
  pausedFor: 'elicitation';
}

/** Runs calls of one execution mode. */
export interface ToolExecutor {
  /**
   * Runs one call. The tool's own failure is a ToolError, which becomes its error result; any other
   * error fails the activity, which retries.
   */
  execute(call: ToolCall): Promise<ToolResult | MemoryWrite | ToolPause>;
  /**
   * Whether calls of the tool named so edit memory: `execute` then plans the edit from the blocks read
   * with the call (a result with a `write`), or, given none, gives a MemoryWrite that plans it again.
   */
  writesMemory?(toolName: string): boolean;
  /** Whether its calls need the agent's blocks, secrets and sandbox configs (`ToolCall.sandbox`). */
  readsSandboxContext?: boolean;
  /**
   * Whether an attempt that took the call over follows on with what the interrupted attempt started
   * (an MCP call's task) rather than running the tool again: it then goes on whatever the tool's
   * retry policy.
   */
  resumes?(call: Omit<ToolCall, 'signal'>): boolean;
  /**
   * Whether a failure of `execute` is known to have left nothing behind (the tool never started: its
   * sandbox or server could not be reached; or its work rolled back): its claim is given up and the
   * retry runs the call as if for the first time. Any other failure after the call began may have
   * followed an effect, so the next attempt takes the call over. Unset: none is known to.
   */
  failedWithoutEffect?(error: unknown): boolean;
}

/**
 * A recorded call's outcome, read from its record: the same whichever attempt recorded it, since the
 * turn's conditional tool rules branch on its output.
 */
export function outcomeOf(execution: ToolExecution): ToolOutcome {
  const text = unpackageFunctionResponse(execution.func_return);
  return { status: execution.status, ...(text.length <= SHORT_OUTPUT_CHARS ? { output: text } : {}) };
}

/** The arguments the tool gets, from the model's JSON text. */
export function argumentsOf(read: ToolCallRead, input: ToolCallInput, agent: AgentRow, tool: ToolRow) {
  if (read.arguments === undefined)
    throw new Error(`tool call ${input.toolCallId} is not in message ${input.messageId}`);
  let args: Record<string, unknown>;
  try {
    const parsed = JSON.parse(read.arguments || '{}');
    args = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
  } catch (error) {
    throw new ToolError(`the arguments are not valid JSON (${(error as Error).message})`);
  }
  delete args.request_heartbeat;
  args = { ...args, ...(input.prefilledArgs ?? {}) };
  const parameters = (tool.json_schema as { parameters?: unknown }).parameters;
  return agent.llm_config.strict ? stripOptionalNulls(args, parameters) : args;
}

/** What the model reads before the result of a call whose arguments the approver changed. */
const editNote = (args: string) =>
  `[The approver changed the arguments before the call ran; it ran with ${args}] `;

/** What `run` gives, or the tool's own failure as its error result. */
async function resultOf<T>(toolName: string, run: () => Promise<T>): Promise<T | ToolResult> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    return {
      status: 'error',
      text: error.message,
      stderr: [friendlyError(toolName, 'ValueError', error.message)],
    };
  }
}

/** Return parts as recorded: each text part cut at the tool's limit, the edit note first. */
function returnedParts(parts: ReturnPart[], note: string, limit = DEFAULT_RETURN_CHAR_LIMIT): ReturnPart[] {
  const cut = parts.map((part) =>
    part.type === 'text' ? { ...part, text: truncateReturn(part.text, limit) } : part,
  );
  return note ? [{ type: 'text', text: note }, ...cut] : cut;
}

/**
 * Records a call's result once (a retry keeps the first), packaged as the model sees it: with an
 * `owner`, only while it holds the call's claim.
 */
async function recordResult(
  q: Queryable,
  input: ToolCallInput,
  owner: string | undefined,
  agent: AgentRow,
  tool: ToolRow | undefined,
  result: ToolResult,
  editedArguments?: string,
): Promise<ToolOutcome> {
  const returned =
    result.status === 'success' && !result.untruncated
      ? truncateReturn(result.text, tool?.return_char_limit ?? DEFAULT_RETURN_CHAR_LIMIT, result.length)
      : result.text;
  const note = editedArguments ? editNote(editedArguments) : '';
  const text = `${note}${returned}`;
  const execution = await recordToolExecution(
    q,
    {
      tool_call_id: input.toolCallId,
      run_id: input.runId,
      agent_id: input.agentId,
      tool_name: input.toolName,
      status: result.status,
      func_return: packageFunctionResponse(result.status === 'success', text, agent.timezone),
      stdout: result.stdout ?? null,
      stderr: result.stderr ?? null,
      func_return_parts: result.parts && returnedParts(result.parts, note, tool?.return_char_limit),
    },
    result.write,
    owner,
  );
  return outcomeOf(execution);
}

/**
 * The activity that runs `executor`'s calls, once per tool call id and by one attempt at a time: the
 * call is claimed with its read (activities/tool-claim.ts), and its result recorded only by the
 * claim's holder. A call's memory write is applied by the statement that records it, so that it is
 * never applied twice. A memory tool's call takes no claim: its whole effect is that statement (or
 * the transaction below), which a call recorded already refuses, so the record is its fence. A memory tool's edit (`writesMemory`) is planned from the blocks read with the
 * call, and written only if they still hold what was read; if not, the call runs again with no blocks
 * read, and plans its edit in the transaction below, with the blocks locked. A call that writes memory
 * after it ran elsewhere (a sandboxed tool writing back its `agent_state`) opens that transaction,
 * under the agent's lock, and checks there that no other attempt recorded the call meanwhile.
 *
 * An attempt that fails before its tool could start (before the executor ran, or a failure its
 * executor knows left nothing behind: the sandbox would not start, the MCP server could not be
 * reached) gives its claim up, so that the next one need not wait for its lease and runs the call as
 * if for the first time. An attempt interrupted (its worker shut down past its grace, its claim lost,
 * the server no longer waiting for it) records nothing, and it and any other failing after its tool
 * began let go of the claim without giving it up: the next attempt takes it over and knows the tool
 * may have run (`takeOver`), as after a crash, whose claim is left to its lease.
 */
export function toolCallActivity(db: Database, executor: ToolExecutor) {
  const read = (input: ToolCallInput, holder: ClaimHolder | undefined, { blocksChanged = false } = {}) =>
    readToolCall(db, input, holder, {
      blocks: executor.writesMemory?.(input.toolName) && !blocksChanged,
      sandbox: executor.readsSandboxContext,
    });
  return measuredToolCall(async (input: ToolCallInput): Promise<ToolOutcome> => {
    const holder = executor.writesMemory?.(input.toolName) ? undefined : claimHolder();
    const locked = (record: (tx: Queryable) => Promise<ToolOutcome>) =>
      db.transaction(async (tx) => {
        const recorded = await findToolExecution(tx, input.toolCallId);
        return recorded ? outcomeOf(recorded) : record(tx);
      }, agentLockOnly(input.agentId));
    const attempt = { began: false };
    const run = (read: ToolCallRead) => runAndRecord(db, input, holder, executor, locked, read, attempt);
    try {
      try {
        return await run(await readClaimed(() => read(input, holder)));
      } catch (error) {
        if (!(error instanceof StaleBlockError)) throw error;
        return await run(await read(input, holder, { blocksChanged: true }));
      }
    } catch (error) {
      const stopped = attemptInterrupted();
      if (holder) {
        // A claim lost to another attempt is no longer this one's to let go of: neither changes it.
        const mayHaveRun = stopped || (attempt.began && !executor.failedWithoutEffect?.(error));
        const letGo = mayHaveRun ? abandonClaim : releaseClaim;
        await letGo(db, input.toolCallId, holder.owner).catch(() => undefined);
      }
      throw stopped ? interruption(`tool call ${input.toolCallId}`) : error;
    }
  });
}

/**
 * What the interrupted attempt of a call this attempt took over is answered with, when the tool may
 * not run again: the model reads that it may have taken effect.
 */
export const interruptedText = (toolName: string) =>
  `Error executing function ${toolName}: ToolCallInterrupted: an earlier attempt of this call was ` +
  'interrupted before it recorded a result, and may have taken effect; it was not run again, since ' +
  'running it twice could repeat what it does. Check its effect before calling it again.';

/**
 * What an attempt that took a call over from an interrupted one does: run it again if the tool may
 * run twice (src/tools/retry-policy.ts), follow on with what the earlier attempt started if its
 * executor can, or else refuse it. Counted, and marked on the call's span.
 */
function takeOver(executor: ToolExecutor, call: Omit<ToolCall, 'signal'>, takenFrom: string): TakeoverAction {
  const action: TakeoverAction = executor.resumes?.(call)
    ? 'resumed'
    : runsAgainAfterInterruption(call.tool, call.mcpServer)
      ? 'rerun'
      : 'refused';
  observeTakeover(action, takenFrom);
  return action;
}

/**
 * Runs a call from what was read for it, holding its claim if it takes one, and records its result;
 * `locked` runs what records a memory write, under the lock. `attempt.began` turns true as the
 * executor starts.
 */
async function runAndRecord(
  q: Queryable,
  input: ToolCallInput,
  holder: ClaimHolder | undefined,
  executor: ToolExecutor,
  locked: (record: (tx: Queryable) => Promise<ToolOutcome>) => Promise<ToolOutcome>,
  read: ToolCallRead,
  attempt: { began: boolean },
): Promise<ToolOutcome> {
  if (read.done) return outcomeOf(read.done);
  const { agent, tool } = read;
  if (!agent) throw new Error(`agent ${input.agentId} no longer exists`);
  const edited = read.edited ? read.arguments : undefined;
  const record = (tx: Queryable, result: ToolResult) =>
    recordResult(tx, input, holder?.owner, agent, tool, result, edited);
  if (!tool) return record(q, { status: 'error', text: 'Tool not found' });
  const ran = await resultOf(input.toolName, async () => {
    const call = {
      input,
      agent,
      tool,
      args: argumentsOf(read, input, agent, tool),
      mcpServer: read.mcpServer,
      elicitation: read.elicitation,
      blocks: read.blocks,
      sandbox: read.sandbox,
    };
    if (read.takenFrom && takeOver(executor, call, read.takenFrom) === 'refused')
      return { status: 'error', text: interruptedText(input.toolName) } satisfies ToolResult;
    const execute = (signal: AbortSignal) => {
      attempt.began = true;
      return executor.execute({ ...call, signal });
    };
    return holder
      ? holdingClaim(q, input.toolCallId, holder, execute)
      : execute(Context.current().cancellationSignal);
  });
  // What a tool gives when it is stopped by anything but a person's cancel is not its answer.
  if (attemptInterrupted()) throw interruption(`tool call ${input.toolCallId}`);
  if ('pausedFor' in ran) {
    // Its next run, with the answer, takes the claim again.
    if (holder) await releaseClaim(q, input.toolCallId, holder.owner);
    return { status: 'success', waitsFor: ran.pausedFor };
  }
  if (!('writeMemory' in ran)) return record(q, ran);
  return locked(async (tx) => record(tx, await resultOf(input.toolName, () => ran.writeMemory(tx))));
}
