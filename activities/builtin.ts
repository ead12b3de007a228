/** Built-in tools (memory, conversation_search, fetch_webpage): trusted code of ours, run in-process. */
import { Context } from '@temporalio/activity';
import { getAgentRow, agentTools } from '../src/db/agents';
import { getMessage } from '../src/db/messages';
import { findToolExecution, recordToolExecution, type ToolExecution } from '../src/db/tool-executions';
import { executeBuiltinTool, isBuiltinTool, ToolError } from '../src/tools/builtin';
import {
  friendlyError,
  packageFunctionResponse,
  stringifyReturn,
  truncateReturn,
} from '../src/agent/tool-returns';
import { stripOptionalNulls } from '../src/tools/strict-mode';
import type { ToolRow } from '../src/db/rows';
import type { ActivityDeps } from './deps';
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

export function builtinActivities({ db, fetchLimits }: ActivityDeps) {
  return {
    async runBuiltinTool(input: ToolCallInput): Promise<ToolOutcome> {
      const done = await findToolExecution(db, input.toolCallId);
      if (done) return outcomeOf(done);
      const agent = await getAgentRow(db, input.agentId);
      if (!agent) throw new Error(`agent ${input.agentId} no longer exists`);
      const tool = (await agentTools(db, input.agentId)).find((t) => t.name === input.toolName);
      let status: 'success' | 'error' = 'success';
      let text: string;
      try {
        if (!isBuiltinTool(input.toolName)) throw new ToolError(`Unknown function: ${input.toolName}`);
        const args = agent.llm_config.strict
          ? stripOptionalNulls(await toolCallArguments(db, input), toolParameters(tool))
          : await toolCallArguments(db, input);
        const signal = Context.current().cancellationSignal;
        const result = await executeBuiltinTool({ db, agent, fetchLimits, signal }, input.toolName, args);
        text = stringifyReturn(result);
        if (!UNTRUNCATED.has(input.toolName)) text = truncateReturn(text, tool?.return_char_limit ?? 50_000);
      } catch (error) {
        if (!(error instanceof ToolError)) throw error; // infrastructure: the activity retries
        status = 'error';
        text = error.message;
      }
      const execution = await recordToolExecution(db, {
        tool_call_id: input.toolCallId,
        run_id: input.runId,
        agent_id: input.agentId,
        tool_name: input.toolName,
        status,
        func_return: packageFunctionResponse(status === 'success', text, agent.timezone),
        stdout: null,
        stderr: status === 'error' ? [friendlyError(input.toolName, 'ValueError', text)] : null,
      });
      return outcomeOf(execution, text);
    },
  };
}
