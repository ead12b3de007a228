/** Starting an agent step: store the input, create the run, start its workflow. */
import type { WorkflowHandle } from '@temporalio/client';
import type { ApiContext } from '../api/context';
import { insertMessage } from '../db/messages';
import { insertRun } from '../db/runs';
import type { RunRow } from '../db/rows';
import { newId } from '../ids';
import type { ClientTool } from '../../activities/contracts';
import type { agentStep } from '../../workflows/agent-step';
import type { AgentStepInput } from '../../workflows/messages';
import { agentIdKey, runIdKey } from '../../workflows/search-attributes';

export interface StepRequest {
  agentId: string;
  userMessages: {
    role: 'user' | 'system' | 'assistant';
    text: string;
    name?: string | null;
    otid?: string | null;
  }[];
  clientTools: ClientTool[];
  maxSteps: number;
  background: boolean;
  runType: string;
}

/** Workflow ids name the agent and the run, so the Temporal UI lists an agent's steps together. */
export const workflowIdFor = (agentId: string, runId: string) => `${agentId}/${runId}`;

export async function startAgentStep(
  ctx: ApiContext,
  request: StepRequest,
): Promise<{ run: RunRow; handle: WorkflowHandle<typeof agentStep> }> {
  const runId = newId('run');
  const workflowId = workflowIdFor(request.agentId, runId);
  const run = await ctx.db.transaction(async (tx) => {
    const row = await insertRun(tx, {
      id: runId,
      agent_id: request.agentId,
      background: request.background,
      metadata: { run_type: request.runType },
      request_config: { max_steps: request.maxSteps },
      workflow_id: workflowId,
    });
    for (const message of request.userMessages) {
      await insertMessage(tx, {
        id: newId('message'),
        agent_id: request.agentId,
        run_id: runId,
        role: message.role,
        content: [{ type: 'text', text: message.text }],
        name: message.name ?? null,
        otid: message.otid ?? null,
      });
    }
    return row;
  });
  const { config } = ctx;
  const input: AgentStepInput = {
    agentId: request.agentId,
    runId,
    clientTools: request.clientTools,
    limits: {
      maxSteps: request.maxSteps,
      modelTimeoutMs: config.MODEL_TIMEOUT_MS,
      modelMaxAttempts: config.MODEL_MAX_ATTEMPTS,
      modelRetryInitialMs: config.MODEL_RETRY_INITIAL_MS,
      toolTimeoutMs: config.TOOL_TIMEOUT_MS,
      toolMaxAttempts: config.TOOL_MAX_ATTEMPTS,
    },
  };
  const handle = await ctx.temporal.workflow.start<typeof agentStep>('agentStep', {
    taskQueue: ctx.agentTaskQueue,
    workflowId,
    args: [input],
    typedSearchAttributes: [
      { key: agentIdKey, value: request.agentId },
      { key: runIdKey, value: runId },
    ],
    staticSummary: `Agent step of ${request.agentId} (${request.runType})`,
  });
  return { run, handle };
}
