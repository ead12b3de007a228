/** What every tool activity shares: the call's arguments, and recording its result once. */
import type { Database, Queryable } from '../src/db';
import { getMessage } from '../src/db/messages';
import type { AgentRow, ToolRow } from '../src/db/rows';
import { findToolExecution, recordToolExecution, type ToolExecution } from '../src/db/tool-executions';
import { lockAgentMemory } from '../src/tools/builtin';
import {
  DEFAULT_RETURN_CHAR_LIMIT,
  packageFunctionResponse,
  truncateReturn,
} from '../src/agent/tool-returns';
import { stripOptionalNulls } from '../src/tools/strict-mode';
import { ToolError } from '../src/tools/tool-error';
import { getTool, getToolVersion } from '../src/db/tools';
import {
  SHORT_OUTPUT_CHARS,
  type StoredToolCallInput,
  type ToolCallInput,
  type ToolOutcome,
} from './contracts';

export function outcomeOf(execution: ToolExecution, text?: string): ToolOutcome {
  return {
    status: execution.status,
    ...(text !== undefined && text.length <= SHORT_OUTPUT_CHARS ? { output: text } : {}),
  };
}

/** The tool as the step resolved it at its start; the current one if that version is gone. */
export async function toolAtVersion(db: Queryable, input: StoredToolCallInput): Promise<ToolRow | undefined> {
  return (await getToolVersion(db, input.toolId, input.toolVersion)) ?? (await getTool(db, input.toolId));
}

/** The model's arguments for a stored tool call, without `request_heartbeat`, with rule-fixed ones on top. */
export async function toolCallArguments(
  db: Queryable,
  input: ToolCallInput,
): Promise<Record<string, unknown>> {
  const message = await getMessage(db, input.messageId);
  const call = message?.tool_calls?.find((c) => c.id === input.toolCallId);
  if (!call) throw new Error(`tool call ${input.toolCallId} is not in message ${input.messageId}`);
  let args: Record<string, unknown>;
  try {
    const parsed = JSON.parse(call.arguments || '{}');
    args = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
  } catch (error) {
    throw new ToolError(`the arguments are not valid JSON (${(error as Error).message})`);
  }
  delete args.request_heartbeat;
  return { ...args, ...(input.prefilledArgs ?? {}) };
}

/** The arguments the tool gets: in strict mode, nulls for arguments the schema leaves optional are dropped. */
export async function argumentsFor(
  db: Queryable,
  input: ToolCallInput,
  agent: Pick<AgentRow, 'llm_config'>,
  tool: ToolRow | undefined,
): Promise<Record<string, unknown>> {
  const args = await toolCallArguments(db, input);
  const parameters = (tool?.json_schema as { parameters?: unknown } | undefined)?.parameters;
  return agent.llm_config.strict ? stripOptionalNulls(args, parameters) : args;
}

export interface ToolResult {
  status: 'success' | 'error';
  text: string;
  /** The whole return's length, when `text` is only its head (the sandbox cut it at the tool's limit). */
  length?: number;
  stdout?: string[] | null;
  stderr?: string[] | null;
}

/**
 * Records a tool call's result (once: a retry keeps the first), packaged as the model sees it, a
 * success cut at the tool's return_char_limit unless `untruncated`.
 */
export async function recordResult(
  q: Queryable,
  input: ToolCallInput,
  agent: Pick<AgentRow, 'timezone'>,
  tool: ToolRow | undefined,
  result: ToolResult,
  untruncated = false,
): Promise<ToolOutcome> {
  const text =
    result.status === 'success' && !untruncated
      ? truncateReturn(result.text, tool?.return_char_limit ?? DEFAULT_RETURN_CHAR_LIMIT, result.length)
      : result.text;
  const execution = await recordToolExecution(q, {
    tool_call_id: input.toolCallId,
    run_id: input.runId,
    agent_id: input.agentId,
    tool_name: input.toolName,
    status: result.status,
    func_return: packageFunctionResponse(result.status === 'success', text, agent.timezone),
    stdout: result.stdout ?? null,
    stderr: result.stderr ?? null,
  });
  return outcomeOf(execution, text);
}

/**
 * Records a call whose effect is a memory write: in one transaction holding the agent's memory lock,
 * and only if no attempt recorded it first, so the write is never applied twice.
 */
export function recordOnceWithMemory(
  db: Database,
  input: ToolCallInput,
  write: (tx: Queryable) => Promise<ToolOutcome>,
): Promise<ToolOutcome> {
  return db.transaction(async (tx) => {
    await lockAgentMemory(tx, input.agentId);
    const recorded = await findToolExecution(tx, input.toolCallId);
    return recorded ? outcomeOf(recorded) : write(tx);
  });
}
