/**
 * Custom tools, run in the sandbox: a regular activity on the turn's task queue, or on `tools-sandbox`
 * for a pool on hosts of its own (TOOL_WORKER_POOLS), or with LOCAL_TOOL_CALLS a local activity.
 */
import type { Database } from '../src/db';
import { stringifyReturn } from '../src/returns/tool-returns';
import { SandboxUnavailableError, type ToolRunResult, type ToolSandboxes } from '../src/sandbox';
import { changedBlocks, environmentsOf, runCustomTool, writeBackMemory } from '../src/tools/custom-tools';
import { ToolError } from '../src/returns/tool-error';
import type { ToolApiAccess } from '../src/access/tool-api-access';
import { toolCallActivity, type ToolExecutor, type ToolResult } from './tool-call';
import type { SandboxActivities } from '../contracts/activities';
import { traceSandboxRun } from '../src/observability/genai';

export interface SandboxActivityDeps {
  db: Database;
  sandboxes: ToolSandboxes;
  /** How long one tool may run before its process group is killed (unless its sandbox config says). */
  toolTimeoutMs: number;
  /** How a tool's `client` reaches the API; none: tools get no token. */
  api?: ToolApiAccess;
}

const resultOf = (run: ToolRunResult): ToolResult => ({
  status: run.status,
  text: stringifyReturn(run.funcReturn),
  length: run.returnChars,
  stdout: run.stdout,
  stderr: run.stderr,
});

/**
 * Runs a custom tool at the version the turn resolved when it started, with the agent's blocks,
 * secrets and sandbox configs read with the call (`readsSandboxContext`). The tool's own failure is its
 * result; a sandbox that cannot run fails the activity, which retries. The block values the tool
 * changed in its `agent_state` are written back with the call's record.
 */
export function sandboxExecutor({
  sandboxes,
  toolTimeoutMs,
  api,
}: Omit<SandboxActivityDeps, 'db'>): ToolExecutor {
  return {
    readsSandboxContext: true,
    // A sandbox that could not run the tool: it did not start.
    failedWithoutEffect: (error) => error instanceof SandboxUnavailableError,
    async execute({ input, agent, tool, args, signal, blocks, sandbox }) {
      if (!tool.source_code) throw new ToolError(`Tool ${tool.name} has no source code to run`);
      if (!blocks || !sandbox) throw new Error('a sandboxed call runs with its sandbox context');
      const choices = sandboxes.choicesFor(tool);
      const call = {
        agent: { ...agent, blocks, secrets: sandbox.secrets },
        tool,
        args,
        defaultTimeoutMs: toolTimeoutMs,
        runId: input.runId,
        toolCallId: input.toolCallId,
      };
      const { job, run } = await traceSandboxRun(tool.name, () =>
        runCustomTool(choices, environmentsOf(sandbox, choices), call, signal, api),
      );
      const result = resultOf(run);
      // Only a write-back needs the transaction under the agent's lock.
      if (run.status !== 'success' || !changedBlocks(job, run).length) return result;
      return {
        async writeMemory(tx) {
          try {
            await writeBackMemory(tx, agent.id, job, run);
            return result;
          } catch (error) {
            if (!(error instanceof ToolError)) throw error;
            return { ...result, status: 'error', text: error.message };
          }
        },
      };
    },
  };
}

export function sandboxActivities(deps: SandboxActivityDeps) {
  return { runSandboxTool: toolCallActivity(deps.db, sandboxExecutor(deps)) } satisfies SandboxActivities;
}
