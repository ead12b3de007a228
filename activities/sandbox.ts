/**
 * Custom tools, run in the sandbox: the activities of the `tools-sandbox` task queue, whose worker pool
 * can live apart from the agent workers.
 */
import { Context } from '@temporalio/activity';
import type { Database } from '../src/db';
import { getAgent } from '../src/db/agents';
import { findToolExecution } from '../src/db/tool-executions';
import type { AgentRecord, ToolRow } from '../src/db/rows';
import { stringifyReturn } from '../src/agent/tool-returns';
import type { Sandbox, ToolJob, ToolRunResult } from '../src/sandbox';
import { customToolJob, writeBackMemory } from '../src/tools/custom-tools';
import type { SandboxType } from '../src/schemas/sandbox-config';
import { ToolError } from '../src/tools/tool-error';
import type { StoredToolCallInput, ToolOutcome } from './contracts';
import { withHeartbeats } from './heartbeat';
import {
  argumentsFor,
  outcomeOf,
  recordOnceWithMemory,
  recordResult,
  type ToolResult,
  toolAtVersion,
} from './tool-results';

export interface SandboxActivityDeps {
  db: Database;
  sandbox: Sandbox;
  /** How long one tool may run before its process group is killed. */
  toolTimeoutMs: number;
  /** Whose sandbox config's variables the tools see. */
  sandboxType: SandboxType;
}

const resultOf = (run: ToolRunResult): ToolResult => ({
  status: run.status,
  text: stringifyReturn(run.funcReturn),
  length: run.returnChars,
  stdout: run.stdout,
  stderr: run.stderr,
});

export function sandboxActivities({ db, sandbox, toolTimeoutMs, sandboxType }: SandboxActivityDeps) {
  const jobFor = async (input: StoredToolCallInput, agent: AgentRecord, tool: ToolRow | undefined) => {
    if (!tool?.source_code) throw new ToolError(`Tool ${input.toolName} has no source code to run`);
    const args = await argumentsFor(db, input, agent, tool);
    return customToolJob(db, sandboxType, agent, tool, args, toolTimeoutMs);
  };

  /** The call's record and the tool's memory edits commit together, once, under the agent's memory lock. */
  const record = (
    input: StoredToolCallInput,
    agent: AgentRecord,
    tool: ToolRow | undefined,
    job: ToolJob,
    run: ToolRunResult,
  ) =>
    recordOnceWithMemory(db, input, async (tx) => {
      let result = resultOf(run);
      try {
        if (run.status === 'success') await writeBackMemory(tx, input.agentId, job, run);
      } catch (error) {
        if (!(error instanceof ToolError)) throw error;
        result = { ...result, status: 'error', text: error.message };
      }
      return recordResult(tx, input, agent, tool, result);
    });

  return {
    /**
     * Runs a custom tool once per tool call id, at the version the step resolved when it started. The
     * tool's own failure is its result; a sandbox that cannot run fails the activity, which retries.
     */
    async runSandboxTool(input: StoredToolCallInput): Promise<ToolOutcome> {
      const done = await findToolExecution(db, input.toolCallId);
      if (done) return outcomeOf(done);
      const agent = await getAgent(db, input.agentId);
      if (!agent) throw new Error(`agent ${input.agentId} no longer exists`);
      const tool = await toolAtVersion(db, input);
      let job: ToolJob;
      try {
        job = await jobFor(input, agent, tool);
      } catch (error) {
        if (!(error instanceof ToolError)) throw error;
        return recordResult(db, input, agent, tool, { status: 'error', text: error.message });
      }
      const run = await withHeartbeats(sandbox.run(job, Context.current().cancellationSignal));
      return record(input, agent, tool, job, run);
    },
  };
}
