/** Built-in tools (memory, conversation_search, fetch_webpage): trusted code of ours, run in-process. */
import { Context } from '@temporalio/activity';
import { getAgentRow, agentTools } from '../src/db/agents';
import { getMessage } from '../src/db/messages';
import { findToolExecution, recordToolExecution, type ToolExecution } from '../src/db/tool-executions';
import {
  editsMemory,
  executeBuiltinTool,
  isBuiltinTool,
  lockAgentMemory,
  ToolError,
} from '../src/tools/builtin';
import type { Queryable } from '../src/db';
import {
  friendlyError,
  packageFunctionResponse,
  stringifyReturn,
  truncateReturn,
} from '../src/agent/tool-returns';
import { stripOptionalNulls } from '../src/tools/strict-mode';
import type { ToolRow } from '../src/db/rows';
import type { ActivityDeps } from './deps';
import { withHeartbeats } from './heartbeat';
import { SHORT_OUTPUT_CHARS, type ToolCallInput, type ToolOutcome } from './contracts';

/** Letta does not truncate what these return: they page through results themselves. */
const UNTRUNCATED = new Set(['conversation_search']);

export function outcomeOf(execution: ToolExecution, text?: string): ToolOutcome {
  return {
    status: execution.status,
    ...(text !== undefined && text.length <= SHORT_OUTPUT_CHARS ? { output: text } : {}),
  };
}

/** The model's arguments for a stored tool call, without `request_heartbeat`, with rule-fixed ones on top. */
export async function toolCallArguments(
  db: ActivityDeps['db'],
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

const toolParameters = (tool: ToolRow | undefined) =>
  (tool?.json_schema as { parameters?: unknown } | undefined)?.parameters;

interface ToolResult {
  status: 'success' | 'error';
  text: string;
}

/** The tool's own failure (a ToolError) is a result; anything else is left to the activity's retries. */
async function attempt(run: () => Promise<unknown>): Promise<ToolResult> {
  try {
    return { status: 'success', text: stringifyReturn(await run()) };
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    return { status: 'error', text: error.message };
  }
}

export function builtinActivities({ db, fetchLimits }: ActivityDeps) {
  return {
    /**
     * Runs a built-in tool once per tool call id: a retry finds the recorded result. A memory edit
     * commits in the same transaction as its record, so it is never applied twice.
     */
    async runBuiltinTool(input: ToolCallInput): Promise<ToolOutcome> {
      const done = await findToolExecution(db, input.toolCallId);
      if (done) return outcomeOf(done);
      const agent = await getAgentRow(db, input.agentId);
      if (!agent) throw new Error(`agent ${input.agentId} no longer exists`);
      const tool = (await agentTools(db, input.agentId)).find((t) => t.name === input.toolName);
      const signal = Context.current().cancellationSignal;

      const execute = async (q: Queryable) => {
        const result = await attempt(async () => {
          if (!isBuiltinTool(input.toolName)) throw new ToolError(`Unknown function: ${input.toolName}`);
          const args = await toolCallArguments(db, input);
          const given = agent.llm_config.strict ? stripOptionalNulls(args, toolParameters(tool)) : args;
          return withHeartbeats(
            executeBuiltinTool({ db: q, agent, fetchLimits, signal }, input.toolName, given),
          );
        });
        if (result.status === 'success' && !UNTRUNCATED.has(input.toolName)) {
          result.text = truncateReturn(result.text, tool?.return_char_limit ?? 50_000);
        }
        const execution = await recordToolExecution(q, {
          tool_call_id: input.toolCallId,
          run_id: input.runId,
          agent_id: input.agentId,
          tool_name: input.toolName,
          status: result.status,
          func_return: packageFunctionResponse(result.status === 'success', result.text, agent.timezone),
          stdout: null,
          stderr:
            result.status === 'error' ? [friendlyError(input.toolName, 'ValueError', result.text)] : null,
        });
        return outcomeOf(execution, result.text);
      };

      if (!editsMemory(input.toolName)) return execute(db);
      return db.transaction(async (tx) => {
        await lockAgentMemory(tx, input.agentId);
        const recorded = await findToolExecution(tx, input.toolCallId);
        return recorded ? outcomeOf(recorded) : execute(tx);
      });
    },
  };
}
