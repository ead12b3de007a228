/** Bookkeeping of a run: its start, its end, and the tool message a step's returns make up. */
import { newId } from '../src/ids';
import { getAgentRow } from '../src/db/agents';
import { resolveStepContext } from '../src/agent/step-context';
import { getMessage, insertMessage } from '../src/db/messages';
import type { FollowUp } from '../src/agent/approvals';
import { finishRun as storeRunOutcome, markRunRunning } from '../src/db/runs';
import { recordToolExecution, toolExecutions } from '../src/db/tool-executions';
import type { Queryable } from '../src/db';
import type { RunStatus } from '../src/db/rows';
import { packageFunctionResponse } from '../src/agent/tool-returns';
import type { ActivityDeps } from './deps';
import type { FinishRunInput, RejectToolCallInput, RunUsage, StepContext, ToolOutcome } from './contracts';

/** Letta's run status for a stop reason (StopReasonType.run_status). */
export function runStatusFor(stopReason: string): RunStatus {
  if (stopReason === 'cancelled') return 'cancelled';
  return ['end_turn', 'max_steps', 'tool_rule', 'requires_approval'].includes(stopReason)
    ? 'completed'
    : 'failed';
}

/** A step's token counts in Letta's usage shape, as runs store them. */
export const usageRecord = (usage: RunUsage) => ({
  prompt_tokens: usage.promptTokens,
  completion_tokens: usage.completionTokens,
  total_tokens: usage.promptTokens + usage.completionTokens,
  step_count: usage.stepCount,
  cached_input_tokens: usage.cachedInputTokens,
  reasoning_tokens: usage.reasoningTokens,
});

/**
 * Stores the returns of `toolCallIds` as one tool message, then the user messages that came with the
 * approval `followUpsFrom` (Letta injects them after the returns). Once, however often it is called.
 */
export async function flushToolReturns(
  db: Queryable,
  agentId: string,
  runId: string,
  toolCallIds: string[],
  followUpsFrom?: string,
) {
  if (toolCallIds.length === 0) return;
  const executions = await toolExecutions(db, toolCallIds);
  const byId = new Map(executions.map((e) => [e.tool_call_id, e]));
  const returns = toolCallIds.flatMap((id) => {
    const e = byId.get(id);
    return e
      ? [
          {
            tool_call_id: id,
            status: e.status,
            func_response: e.func_return,
            stdout: e.stdout,
            stderr: e.stderr,
          },
        ]
      : [];
  });
  await insertMessage(db, {
    id: newId('message'),
    agent_id: agentId,
    run_id: runId,
    role: 'tool',
    tool_returns: returns,
    idempotency_key: `${runId}:tools:${toolCallIds.join(',')}`,
  });
  if (followUpsFrom) await storeFollowUps(db, agentId, runId, followUpsFrom);
}

async function storeFollowUps(db: Queryable, agentId: string, runId: string, approvalMessageId: string) {
  const approval = await getMessage(db, approvalMessageId);
  const followUps = (approval?.metadata?.follow_ups ?? []) as FollowUp[];
  for (const [i, message] of followUps.entries()) {
    await insertMessage(db, {
      id: newId('message'),
      agent_id: agentId,
      run_id: runId,
      role: message.role,
      content: [{ type: 'text', text: message.text }],
      name: message.name ?? null,
      otid: message.otid ?? null,
      idempotency_key: `${approvalMessageId}:follow-up:${i}`,
    });
  }
}

export function runActivities({ db }: ActivityDeps) {
  return {
    /**
     * Marks the run running and resolves the agent's tools and rules as they are now, for the whole
     * request: one that continues a paused step (the API resolves a new step's in its input).
     */
    async startRun({ agentId, runId }: { agentId: string; runId: string }): Promise<StepContext> {
      const agent = await getAgentRow(db, agentId);
      if (!agent) throw new Error(`agent ${agentId} no longer exists`);
      await markRunRunning(db, runId);
      return resolveStepContext(db, agent);
    },

    /** A tool call that does not run (a broken rule, an unknown tool): the model gets `reason` as an error. */
    async rejectToolCall(input: RejectToolCallInput): Promise<ToolOutcome> {
      const agent = await getAgentRow(db, input.agentId);
      await recordToolExecution(db, {
        tool_call_id: input.toolCallId,
        run_id: input.runId,
        agent_id: input.agentId,
        tool_name: input.toolName,
        status: 'error',
        func_return: packageFunctionResponse(false, input.reason, agent?.timezone),
        stdout: null,
        stderr: null,
      });
      return { status: 'error' };
    },

    /** A message from the system to the model, in the user's turn (Letta's heartbeat alerts). */
    async appendUserMessage({
      agentId,
      runId,
      step,
      text,
    }: {
      agentId: string;
      runId: string;
      step: number;
      text: string;
    }) {
      await insertMessage(db, {
        id: newId('message'),
        agent_id: agentId,
        run_id: runId,
        role: 'user',
        content: [{ type: 'text', text }],
        idempotency_key: `${runId}:alert:${step}`,
      });
    },

    async finishRun(input: FinishRunInput): Promise<void> {
      await flushToolReturns(db, input.agentId, input.runId, input.pendingToolCallIds, input.followUpsFrom);
      await storeRunOutcome(db, input.runId, {
        status: runStatusFor(input.stopReason),
        stopReason: input.stopReason,
        usage: usageRecord(input.usage),
        error: input.error && { error_type: input.error.type, message: input.error.message },
      });
      await db.query('UPDATE agents SET last_stop_reason = $2 WHERE id = $1', [
        input.agentId,
        input.stopReason,
      ]);
    },
  };
}
