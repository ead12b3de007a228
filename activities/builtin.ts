/** Built-in tools (memory, conversation_search, fetch_webpage): trusted code of ours, run in-process. */
import { editsMemory, executeBuiltinTool, isBuiltinTool, ToolError } from '../src/tools/builtin';
import type { Queryable } from '../src/db';
import { stringifyReturn } from '../src/agent/tool-returns';
import type { ActivityDeps } from './deps';
import { toolCallActivity, type ToolExecutor, type ToolResult } from './tool-call';

/** Letta does not truncate what these return: they page through results themselves. */
const UNTRUNCATED = new Set(['conversation_search']);

/** A memory edit commits in the same transaction as its record, so it is never applied twice. */
export function builtinExecutor({
  db,
  web,
  providers,
  files,
}: Pick<ActivityDeps, 'db' | 'web' | 'providers' | 'files'>): ToolExecutor {
  return {
    writesMemory: editsMemory,
    async execute({ input, agent, args, signal, blocks }) {
      const name = input.toolName;
      if (!isBuiltinTool(name)) throw new ToolError(`Unknown function: ${name}`);
      const run = async (q: Queryable): Promise<ToolResult> => ({
        status: 'success',
        text: stringifyReturn(
          await executeBuiltinTool({ db: q, agent, web, providers, files, signal, blocks }, name, args),
        ),
        untruncated: UNTRUNCATED.has(name),
      });
      return editsMemory(name) ? { writeMemory: run } : run(db);
    },
  };
}

export function builtinActivities(deps: ActivityDeps) {
  return { runBuiltinTool: toolCallActivity(deps.db, builtinExecutor(deps)) };
}
