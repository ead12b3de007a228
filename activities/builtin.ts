/** Built-in tools (memory, conversation_search, fetch_webpage): trusted code of ours, run in-process. */
import { Context } from '@temporalio/activity';
import { agentTool, getAgentRow } from '../src/db/agents';
import { findToolExecution } from '../src/db/tool-executions';
import { editsMemory, executeBuiltinTool, isBuiltinTool, ToolError } from '../src/tools/builtin';
import type { Queryable } from '../src/db';
import { friendlyError, stringifyReturn } from '../src/agent/tool-returns';
import type { ActivityDeps } from './deps';
import { withHeartbeats } from './heartbeat';
import type { ToolCallInput, ToolOutcome } from './contracts';
import { argumentsFor, outcomeOf, recordOnceWithMemory, recordResult, type ToolResult } from './tool-results';

/** Letta does not truncate what these return: they page through results themselves. */
const UNTRUNCATED = new Set(['conversation_search']);

/** The tool's own failure (a ToolError) is a result; anything else is left to the activity's retries. */
async function attempt(run: () => Promise<unknown>): Promise<ToolResult> {
  try {
    return { status: 'success', text: stringifyReturn(await run()) };
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    return { status: 'error', text: error.message };
  }
}

export function builtinActivities({ db, fetchPolicy }: ActivityDeps) {
  return {
    /**
     * Runs a built-in tool once per tool call id: a retry finds the recorded result. A memory edit
     * commits in the same transaction as its record, so it is never applied twice.
     */
    async runBuiltinTool(input: ToolCallInput): Promise<ToolOutcome> {
      // At once: a local activity runs inside its workflow task, every round trip counts.
      const [done, agent, tool] = await Promise.all([
        findToolExecution(db, input.toolCallId),
        getAgentRow(db, input.agentId),
        agentTool(db, input.agentId, input.toolName),
      ]);
      if (done) return outcomeOf(done);
      if (!agent) throw new Error(`agent ${input.agentId} no longer exists`);
      const signal = Context.current().cancellationSignal;

      const execute = async (q: Queryable) => {
        const result = await attempt(async () => {
          if (!isBuiltinTool(input.toolName)) throw new ToolError(`Unknown function: ${input.toolName}`);
          // On `q`: inside the memory transaction, a second connection could wait on a pool it holds.
          const args = await argumentsFor(q, input, agent, tool);
          return withHeartbeats(
            executeBuiltinTool({ db: q, agent, fetchPolicy, signal }, input.toolName, args),
          );
        });
        const stderr =
          result.status === 'error' ? [friendlyError(input.toolName, 'ValueError', result.text)] : null;
        return recordResult(q, input, agent, tool, { ...result, stderr }, UNTRUNCATED.has(input.toolName));
      };

      if (!editsMemory(input.toolName)) return execute(db);
      return recordOnceWithMemory(db, input, execute);
    },
  };
}
