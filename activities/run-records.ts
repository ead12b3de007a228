/** What a run leaves in the database besides its messages from the model: its usage, its tool messages. */
import { newId } from '../src/ids';
import { getMessage, insertMessage, messageOfToolCall } from '../src/db/messages';
import type { FollowUp } from '../src/approvals/answering';
import { toolExecutions } from '../src/db/tool-executions';
import type { InputMessage } from '../src/db/rows';
import { packageFunctionResponse } from '../src/returns/tool-returns';
import type { Queryable } from '../src/db';
import type { RunUsage } from '../contracts/payloads';

/** A run's token counts in Letta's usage shape, as runs store them. */
export const usageRecord = (usage: RunUsage) => ({
  prompt_tokens: usage.promptTokens,
  completion_tokens: usage.completionTokens,
  total_tokens: usage.promptTokens + usage.completionTokens,
  step_count: usage.stepCount,
  cached_input_tokens: usage.cachedInputTokens,
  reasoning_tokens: usage.reasoningTokens,
});

/**
 * The return of a call that never finished: its run was cancelled, or failed, while it ran. Every call
 * gets a return all the same, or the history would break its invariant (src/memory/history-invariant.ts).
 */
const unfinished = () =>
  ({
    status: 'error',
    func_return: packageFunctionResponse(false, 'Error: the tool call did not finish: its run ended first'),
    stdout: null,
    stderr: null,
    func_return_parts: null,
  }) as const;

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
  const [executions, call] = await Promise.all([
    toolExecutions(db, toolCallIds),
    messageOfToolCall(db, { agentId, runId }, toolCallIds[0]),
  ]);
  const byId = new Map(executions.map((e) => [e.tool_call_id, e]));
  const returns = toolCallIds.map((id) => {
    const e = byId.get(id) ?? unfinished();
    return {
      tool_call_id: id,
      status: e.status,
      func_response: e.func_return,
      ...(e.func_return_parts ? { parts: e.func_return_parts } : {}),
      stdout: e.stdout,
      stderr: e.stderr,
    };
  });
  await insertMessage(db, {
    id: newId('message'),
    agent_id: agentId,
    run_id: runId,
    role: 'tool',
    // As Letta's tool message: the (first) tool's name, and the step whose reply made the calls.
    name: call?.tool_calls?.find((c) => c.id === toolCallIds[0])?.name ?? null,
    step_id: call?.step_id ?? null,
    tool_returns: returns,
    idempotency_key: `${runId}:tools:${toolCallIds.join(',')}`,
  });
  if (followUpsFrom) await storeFollowUps(db, agentId, runId, followUpsFrom);
}

async function storeFollowUps(db: Queryable, agentId: string, runId: string, approvalMessageId: string) {
  const approval = await getMessage(db, approvalMessageId);
  const followUps = (approval?.metadata?.follow_ups ?? []) as FollowUp[];
  await storeTextMessages(db, agentId, runId, followUps, `${approvalMessageId}:follow-up`);
}

/**
 * The messages a request brought, stored with the turn's first reply (idempotently: a retry finds
 * them). They waited with the run while the agent's session ran the turns queued before it, and a turn
 * whose model call fails leaves none: a client's retries do not pile up copies of them.
 */
export function storeRequestInput(db: Queryable, agentId: string, runId: string, messages: InputMessage[]) {
  return storeTextMessages(db, agentId, runId, messages, `${runId}:input`);
}

/** A request's text messages, in order, each once under `keyPrefix` and its position. */
async function storeTextMessages(
  db: Queryable,
  agentId: string,
  runId: string,
  messages: FollowUp[],
  keyPrefix: string,
) {
  for (const [i, message] of messages.entries()) {
    await insertMessage(db, {
      id: newId('message'),
      agent_id: agentId,
      run_id: runId,
      role: message.role,
      content: [{ type: 'text', text: message.text }],
      name: message.name ?? null,
      otid: message.otid ?? null,
      idempotency_key: `${keyPrefix}:${i}`,
    });
  }
}
