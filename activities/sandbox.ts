/**
 * Custom tools, run in the sandbox: the activities of the `tools-sandbox` task queue, whose worker pool
 * can live apart from the agent workers (see DESIGN.md).
 */
import { Context } from '@temporalio/activity';
import type { Database } from '../src/db';
import { getAgent } from '../src/db/agents';
import { findToolExecution } from '../src/db/tool-executions';
import { getTool, getToolVersion } from '../src/db/tools';
import { stringifyReturn } from '../src/agent/tool-returns';
import type { Sandbox } from '../src/sandbox';
import { runtimeFields } from '../src/sandbox/node-runtime';
import { ToolError } from '../src/tools/tool-error';
import type { SandboxToolCallInput, ToolOutcome } from './contracts';
import { withHeartbeats } from './heartbeat';
import { argumentsFor, outcomeOf, recordResult, type ToolResult } from './tool-results';

export interface SandboxActivityDeps {
  db: Database;
  sandbox: Sandbox;
  /** How long one tool may run before its process group is killed. */
  toolTimeoutMs: number;
}

export function sandboxActivities({ db, sandbox, toolTimeoutMs }: SandboxActivityDeps) {
  return {
    /**
     * Runs a custom tool once per tool call id, at the version the step resolved when it started. The
     * tool's own failure is its result; a sandbox that cannot run fails the activity, which retries.
     */
    async runSandboxTool(input: SandboxToolCallInput): Promise<ToolOutcome> {
      const done = await findToolExecution(db, input.toolCallId);
      if (done) return outcomeOf(done);
      const agent = await getAgent(db, input.agentId);
      if (!agent) throw new Error(`agent ${input.agentId} no longer exists`);
      const tool =
        (await getToolVersion(db, input.toolId, input.toolVersion)) ?? (await getTool(db, input.toolId));
      let result: ToolResult;
      try {
        if (!tool?.source_code) throw new ToolError(`Tool ${input.toolName} has no source code to run`);
        const run = await withHeartbeats(
          sandbox.run(
            {
              name: tool.name,
              ...runtimeFields(tool),
              source: tool.source_code,
              args: await argumentsFor(db, input, agent, tool),
              env: {
                ...Object.fromEntries(agent.secrets.map((s) => [s.key, s.value])),
                LETTA_AGENT_ID: agent.id,
                LETTA_TOOL_ID: tool.id,
              },
              timeoutMs: toolTimeoutMs,
            },
            Context.current().cancellationSignal,
          ),
        );
        result = {
          status: run.status,
          text: stringifyReturn(run.funcReturn),
          stdout: run.stdout,
          stderr: run.stderr,
        };
      } catch (error) {
        if (!(error instanceof ToolError)) throw error;
        result = { status: 'error', text: error.message };
      }
      return recordResult(db, input, agent, tool ?? undefined, result);
    },
  };
}
