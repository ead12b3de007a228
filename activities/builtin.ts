/** Built-in tools (memory, conversation_search, fetch_webpage): trusted code of ours, run in-process. */
import {
  editsMemory,
  executeBuiltinTool,
  isBuiltinTool,
  planBlockEdit,
  planMemoryEdit,
  ToolError,
} from '../src/tools/builtin';
import type { BlockValueWrite } from '../src/db/tool-executions';
import { stringifyReturn } from '../src/returns/tool-returns';
import type { ActivityDeps } from './deps';
import { toolCallActivity, type ToolExecutor, type ToolResult } from './tool-call';
import type { BuiltinActivities } from '../contracts/activities';

/** Letta does not truncate what these return: they page through results themselves. */
const UNTRUNCATED = new Set(['conversation_search']);

/**
 * A memory edit's block write goes in the statement that records the call, so it is never applied
 * twice, and only over the value it was planned from, so it never overwrites an edit it did not see.
 */
export function builtinExecutor({
  db,
  web,
  providers,
  files,
}: Pick<ActivityDeps, 'db' | 'web' | 'providers' | 'files'>): ToolExecutor {
  return {
    writesMemory: editsMemory,
    // Their writes are one transaction each (what fails rolls back), and their web calls are reads.
    failedWithoutEffect: () => true,
    async execute({ input, agent, args, signal, blocks }) {
      const name = input.toolName;
      if (!isBuiltinTool(name)) throw new ToolError(`Unknown function: ${name}`);
      const success = (result: unknown, write?: BlockValueWrite): ToolResult => ({
        status: 'success',
        text: stringifyReturn(result),
        untruncated: UNTRUNCATED.has(name),
        write,
      });
      if (!editsMemory(name)) {
        const context = { db, agent, web, providers, files, signal };
        return success(await executeBuiltinTool(context, name, args));
      }
      // Planned from the blocks read with the call, its write conditional on them unchanged; planned
      // again under the lock when it creates a block, or when a block changed meanwhile (no `blocks`).
      const planned = blocks && planBlockEdit(name, args, blocks);
      if (planned) return success(planned.result, planned.write);
      return {
        async writeMemory(tx) {
          const { result, write } = await planMemoryEdit(tx, agent.id, name, args);
          return success(result, write);
        },
      };
    },
  };
}

export function builtinActivities(deps: ActivityDeps) {
  return { runBuiltinTool: toolCallActivity(deps.db, builtinExecutor(deps)) } satisfies BuiltinActivities;
}
