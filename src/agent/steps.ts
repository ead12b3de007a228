/**
 * What a messages request does to an agent step: start one (store the input, create the run, start
 * its workflow), or answer a paused one (check the answer, store it, signal the workflow).
 */
import { WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import type { ApiContext } from '../api/context';
import { HttpError, notFound } from '../api/errors';
import { lockAgentRow } from '../db/agents';
import { insertMessage } from '../db/messages';
import { getRun, insertRun } from '../db/runs';
import type { PendingApproval, RunRow } from '../db/rows';
import { newId } from '../ids';
import { resolveStepContext } from './step-context';
import type { ClientTool } from '../../activities/contracts';
import type { agentStep } from '../../workflows/agent-step';
import { approvalAnsweredSignal, type AgentStepInput } from '../../workflows/messages';
import { agentIdKey, runIdKey } from '../../workflows/search-attributes';
import {
  answersMismatch,
  NOTHING_PENDING,
  PENDING_APPROVAL_TEXT,
  recordAnswer,
  repeatedAnswer,
  type ApprovalAnswer,
  type FollowUp,
} from './approvals';

/** What every messages request asks for, whether it starts a step or answers a paused one. */
interface RequestOptions {
  agentId: string;
  clientTools: ClientTool[];
  maxSteps: number;
  approvalTimeoutSeconds?: number | null;
  background: boolean;
  runType: string;
}

export interface StepRequest extends RequestOptions {
  userMessages: FollowUp[];
}

export interface AnswerRequest extends RequestOptions {
  answers: ApprovalAnswer[];
  followUps: FollowUp[];
}

export type StepHandle = WorkflowHandle<typeof agentStep>;

/** A run's own settings, read by the workflow when the run continues a paused step. */
const requestConfig = (request: RequestOptions) => ({
  max_steps: request.maxSteps,
  client_tools: request.clientTools,
  approval_timeout_seconds: request.approvalTimeoutSeconds ?? null,
});

const pendingApprovalError = (pending: PendingApproval) =>
  new HttpError(409, {
    code: 'PENDING_APPROVAL',
    message: PENDING_APPROVAL_TEXT,
    pending_request_id: pending.message_id,
  });

/** Workflow ids name the agent and the run, so the Temporal UI lists an agent's steps together. */
export const workflowIdFor = (agentId: string, runId: string) => `${agentId}/${runId}`;

export async function startAgentStep(
  ctx: ApiContext,
  request: StepRequest,
): Promise<{ run: RunRow; handle: StepHandle }> {
  const runId = newId('run');
  const workflowId = workflowIdFor(request.agentId, runId);
  const { run, context } = await ctx.db.transaction(async (tx) => {
    const agent = await lockAgentRow(tx, request.agentId);
    if (!agent) throw notFound(`Agent ${request.agentId}`);
    if (agent.pending_approval) throw pendingApprovalError(agent.pending_approval);
    const row = await insertRun(tx, {
      id: runId,
      agent_id: request.agentId,
      background: request.background,
      metadata: { run_type: request.runType },
      request_config: requestConfig(request),
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
    return { run: row, context: await resolveStepContext(tx, agent) };
  });
  const { config } = ctx;
  const input: AgentStepInput = {
    agentId: request.agentId,
    runId,
    sandboxTaskQueue: ctx.taskQueues.sandbox,
    mcpTaskQueue: ctx.taskQueues.mcp,
    clientTools: request.clientTools,
    localActivities: true,
    context,
    limits: {
      maxSteps: request.maxSteps,
      modelTimeoutMs: config.MODEL_TIMEOUT_MS,
      modelMaxAttempts: config.MODEL_MAX_ATTEMPTS,
      modelRetryInitialMs: config.MODEL_RETRY_INITIAL_MS,
      toolTimeoutMs: config.TOOL_TIMEOUT_MS,
      toolMaxAttempts: config.TOOL_MAX_ATTEMPTS,
      heartbeatTimeoutMs: config.ACTIVITY_HEARTBEAT_TIMEOUT_MS,
      mcpCallTimeoutMs: config.MCP_CALL_TIMEOUT_MS,
      mcpConnectTimeoutMs: config.MCP_CONNECT_TIMEOUT_MS,
    },
  };
  const handle = await ctx.temporal.workflow.start<typeof agentStep>('agentStep', {
    taskQueue: ctx.taskQueues.agent,
    workflowId,
    args: [input],
    typedSearchAttributes: [
      { key: agentIdKey, value: request.agentId },
      { key: runIdKey, value: runId },
    ],
    staticSummary: `Agent step of ${request.agentId} (${request.runType})`,
    // With the agent worker in this process (npm start), the start's response carries the first
    // workflow task to it: no trip through matching. Without one (--role=api), the SDK's core does
    // not ask for it, and the task goes through matching as before.
    requestEagerStart: true,
  });
  return { run, handle };
}

/**
 * Answers the step the agent is paused in. The answer must cover exactly the pending calls; it is
 * stored (with a new run, under which the step continues) before the workflow is signalled. The same
 * answer sent again finds the first one and signals again, which the workflow ignores.
 */
export async function answerPausedStep(
  ctx: ApiContext,
  request: AnswerRequest,
): Promise<{ run: RunRow; handle: StepHandle }> {
  const { agentId } = request;
  const { answered, workflowId, repeated } = await ctx.db.transaction(async (tx) => {
    const agent = await lockAgentRow(tx, agentId);
    if (!agent) throw notFound(`Agent ${agentId}`);
    const pending = agent.pending_approval;
    if (!pending) {
      const previous = await repeatedAnswer(tx, agentId, request.answers);
      if (!previous) throw new HttpError(400, NOTHING_PENDING);
      const run = await getRun(tx, previous.runId);
      return { answered: previous, workflowId: run!.workflow_id, repeated: true };
    }
    const answers = withLegacyIds(pending, request.answers);
    const mismatch = answersMismatch(pending, answers);
    if (mismatch) throw new HttpError(400, mismatch);
    const recorded = await recordAnswer(tx, {
      agentId,
      pending,
      answers,
      followUps: request.followUps,
      runId: newId('run'),
      newRun: {
        background: request.background,
        metadata: { run_type: request.runType },
        request_config: requestConfig(request),
      },
    });
    const context = await resolveStepContext(tx, agent);
    return { answered: { ...recorded, context }, workflowId: pending.workflow_id, repeated: false };
  });
  const handle = ctx.temporal.workflow.getHandle<typeof agentStep>(workflowId);
  try {
    await handle.signal(approvalAnsweredSignal, answered);
  } catch (error) {
    // A repeated answer may find the step long finished: its run tells the outcome.
    if (!(repeated && error instanceof WorkflowNotFoundError)) throw error;
  }
  return { run: (await getRun(ctx.db, answered.runId))!, handle };
}

/** Letta's legacy form: the one pending call answered by the approval request's message id. */
function withLegacyIds(pending: PendingApproval, answers: ApprovalAnswer[]): ApprovalAnswer[] {
  if (pending.tool_call_ids.length !== 1) return answers;
  return answers.map((a) =>
    a.tool_call_id === pending.message_id ? { ...a, tool_call_id: pending.tool_call_ids[0] } : a,
  );
}
