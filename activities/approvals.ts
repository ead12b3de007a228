/** The pause of an agent turn for approvals or client tools: entering it, its timeout, its answer. */
import { getAgentRow, setLastStopReason } from '../src/db/agents';
import { getMessage, latestApprovalRequest } from '../src/db/messages';
import { finishRun as storeRunOutcome, getRun, isActiveRun, lockRun } from '../src/db/runs';
import { recordUnrunCall } from '../src/db/tool-executions';
import type { MessageRow, PendingApproval, RunRow } from '../src/db/rows';
import type { Queryable } from '../src/db';
import { newId } from '../src/ids';
import { insertApprovalRequest } from '../src/db/approval-requests';
import {
  answerFor,
  CANCEL_DENIAL_REASON,
  clientReturn,
  denialText,
  recordAnswer,
  type ApprovalAnswer,
} from '../src/approvals/answering';
import { lockPendingApproval, pendingApproval, runScope, setPendingApproval } from '../src/db/conversations';
import { packageFunctionResponse } from '../src/returns/tool-returns';
import type { ReturnPart } from '../src/returns/return-parts';
import { resolveTurnContext } from '../src/agent/turn-context';
import { storeRequestPart } from '../src/db/request-parts';
import type { ActivityDeps } from './deps';
import { noUsage } from '../contracts/usage';
import { observeRunEnd } from '../src/observability/metrics';
import type {
  ApprovalAnswered,
  ApprovalWait,
  ClientTool,
  ElicitationPauseInput,
  EnterPauseInput,
  RecordedAnswer,
  ResumePlan,
} from '../contracts/payloads';
import { flushToolReturns, usageRecord } from './run-records';
import { startRunCallback } from './deps';
import { markApprovalRequest } from '../src/db/messages';
import { answeredElicitations, shownElicitations } from '../src/approvals/elicitations';
import type { ShownElicitation } from '../src/db/mcp-elicitations';
import type { ApprovalActivities } from '../contracts/activities';

const DEFAULT_MAX_STEPS = 50;

const denyAll = (pending: PendingApproval, reason: string): ApprovalAnswer[] =>
  pending.tool_call_ids.map((id) => ({ type: 'approval', tool_call_id: id, approve: false, reason }));

const timeoutReason = (pending: PendingApproval) => {
  const seconds = Math.round((Date.parse(pending.expires_at!) - Date.parse(pending.requested_at)) / 1000);
  return `No answer came within the approval timeout of ${seconds} seconds, so the tool call was denied.`;
};

async function requiredMessage(db: Queryable, id: string): Promise<MessageRow> {
  const message = await getMessage(db, id);
  if (!message) throw new Error(`message ${id} does not exist`);
  return message;
}

const msUntil = (time: string) => Math.max(0, Date.parse(time) - Date.now());

/** What is left of the wait for `messageId`: none when it is no longer the pending approval. */
export function waitOf(pending: PendingApproval | null, messageId: string): ApprovalWait {
  if (pending?.message_id !== messageId) return { timeoutMs: null };
  const timeoutMs = pending.expires_at ? msUntil(pending.expires_at) : null;
  return pending.remind_at ? { timeoutMs, reminderMs: msUntil(pending.remind_at) } : { timeoutMs };
}

const secondsFrom = (start: Date, seconds: number) =>
  new Date(start.getTime() + seconds * 1000).toISOString();

const endRunPaused = (tx: Queryable, input: Pick<EnterPauseInput, 'runId' | 'usage'>) =>
  storeRunOutcome(tx, input.runId, {
    status: 'completed',
    stopReason: 'requires_approval',
    usage: usageRecord(input.usage),
  }).then((ended) => observeRunEnd('requires_approval', ended.createdAt));

/** A call the pause waits on, with the arguments the approver sees. */
export interface PausedCall {
  id: string;
  name: string;
  arguments: string;
  kind: 'approval' | 'client_tool' | 'elicitation';
  /** What the call's MCP server asks, for a call of kind `elicitation`. */
  elicitation?: ShownElicitation;
}

/**
 * Pauses the agent on a reply no one can have answered yet: records what it waits for (the waiting
 * calls' policies' approval timeout, else the run's, else the agent's; the policies' reminder) and ends
 * the request's run with `requires_approval`.
 */
export async function enterPause(
  tx: Queryable,
  input: EnterPauseInput & { calls: PausedCall[] },
  run: RunRow,
  agentTimeoutSeconds: number | null,
): Promise<ApprovalWait> {
  const seconds =
    input.timeoutSeconds ??
    (run.request_config?.approval_timeout_seconds as number | null | undefined) ??
    agentTimeoutSeconds;
  const now = new Date();
  const pending: PendingApproval = {
    run_id: input.runId,
    workflow_id: run.workflow_id,
    message_id: input.messageId,
    tool_call_ids: input.toolCallIds,
    requested_at: now.toISOString(),
    expires_at: seconds ? secondsFrom(now, seconds) : null,
    ...(input.reminderSeconds ? { remind_at: secondsFrom(now, input.reminderSeconds) } : {}),
  };
  await setPendingApproval(tx, { agentId: input.agentId, conversationId: run.conversation_id }, pending);
  await insertApprovalRequest(tx, {
    request_message_id: input.messageId,
    agent_id: input.agentId,
    conversation_id: run.conversation_id,
    run_id: input.runId,
    workflow_id: run.workflow_id,
    requested_at: now,
    expires_at: pending.expires_at ? new Date(pending.expires_at) : null,
    calls: input.calls.map((call) => ({
      tool_call_id: call.id,
      tool_name: call.name,
      arguments: call.arguments,
      kind: call.kind,
      elicitation: call.elicitation ?? null,
    })),
  });
  await setLastStopReason(tx, input.agentId, 'requires_approval');
  await endRunPaused(tx, input);
  return waitOf(pending, input.messageId);
}

/**
 * Records a tool call's result that no tool produced: a client's return or a denial, under the call's
 * claim (recordUnrunCall). A call waiting for its answer has no attempt running, so an attempt holding
 * its claim is a fault the activity's retry waits out.
 */
async function recordResult(
  q: Queryable,
  call: { id: string; name: string },
  ids: { agentId: string; runId: string; timezone: string },
  result: {
    ok: boolean;
    text: string;
    parts?: ReturnPart[];
    stdout?: string[] | null;
    stderr?: string[] | null;
  },
): Promise<void> {
  const recorded = await recordUnrunCall(
    q,
    {
      tool_call_id: call.id,
      run_id: ids.runId,
      agent_id: ids.agentId,
      tool_name: call.name,
      status: result.ok ? 'success' : 'error',
      func_return: packageFunctionResponse(result.ok, result.text, ids.timezone),
      stdout: result.stdout ?? null,
      stderr: result.stderr ?? null,
      func_return_parts: result.parts ?? null,
    },
    `answer/${ids.runId}`,
  );
  if (recorded === 'held')
    throw new Error(`tool call ${call.id}: an attempt of the call holds its claim; its answer waits`);
}

/**
 * Cancel while paused: denies every call `messageId` waits on with Letta's cancel text, under `runId`,
 * and stores their returns. Returns the run of an answer accepted first, which ends cancelled too.
 */
async function denyPauseOnCancel(
  tx: Queryable,
  input: { agentId: string; runId: string; messageId: string },
): Promise<string | null> {
  const pending = await lockPendingApproval(tx, await runScope(tx, input.runId));
  if (pending?.message_id !== input.messageId) {
    return (await answerFor(tx, input.messageId))?.runId ?? null;
  }
  await recordAnswer(tx, {
    agentId: input.agentId,
    pending,
    answers: denyAll(pending, CANCEL_DENIAL_REASON),
    followUps: [],
    runId: input.runId,
    answeredBy: { kind: 'cancel' },
  });
  const agent = await getAgentRow(tx, input.agentId);
  const request = await requiredMessage(tx, input.messageId);
  const ids = { agentId: input.agentId, runId: input.runId, timezone: agent?.timezone ?? 'UTC' };
  for (const call of request.tool_calls ?? []) {
    if (!pending.tool_call_ids.includes(call.id)) continue;
    await recordResult(tx, call, ids, { ok: false, text: denialText(CANCEL_DENIAL_REASON) });
  }
  await flushToolReturns(tx, input.agentId, input.runId, pending.tool_call_ids);
  return null;
}

/**
 * A turn cancelled while its model call was storing a reply that waits: a cancel does not stop a
 * running activity at once, so the call may have entered its pause after all. That pause is denied as
 * a cancel denies one, and a request that answered it meanwhile ends cancelled too. Called as the run
 * is marked cancelled, under its row lock: a model call entering a pause takes that lock first and
 * leaves a run that is no longer active unpaused.
 */
export async function releaseCancelledPause(tx: Queryable, agentId: string, runId: string): Promise<void> {
  const paused = await latestApprovalRequest(tx, runId);
  if (!paused) return;
  const answeredRun = await denyPauseOnCancel(tx, { agentId, runId, messageId: paused.id });
  if (answeredRun && answeredRun !== runId) {
    const ended = await storeRunOutcome(tx, answeredRun, {
      status: 'cancelled',
      stopReason: 'cancelled',
      usage: usageRecord(noUsage()),
    });
    observeRunEnd('cancelled', ended.createdAt);
  }
}

/** Denies the calls `messageId` waits on for a timeout under a new run, or finds the answer that came first. */
async function expireOrFindAnswer(
  tx: Queryable,
  input: { agentId: string; messageId: string },
): Promise<RecordedAnswer | null> {
  const request = await requiredMessage(tx, input.messageId);
  const pending = await lockPendingApproval(tx, {
    agentId: input.agentId,
    conversationId: request.conversation_id,
  });
  if (pending?.message_id !== input.messageId) return (await answerFor(tx, input.messageId)) ?? null;
  const previous = await getRun(tx, pending.run_id);
  return recordAnswer(tx, {
    agentId: input.agentId,
    pending,
    answers: denyAll(pending, timeoutReason(pending)),
    followUps: [],
    runId: newId('run'),
    newRun: {
      background: true,
      metadata: { run_type: APPROVAL_TIMEOUT_RUN },
      request_config: previous?.request_config ?? null,
    },
    answeredBy: { kind: 'timeout' },
  });
}

/**
 * Makes the reply an approval request for its calls waiting on elicitations and enters the pause; a
 * retry finds the pause and returns its wait alone.
 */
async function enterElicitationPause(
  tx: Queryable,
  input: ElicitationPauseInput,
): Promise<{ wait: ApprovalWait; callbackUrl?: string | null }> {
  const run = await lockRun(tx, input.runId);
  const message = await requiredMessage(tx, input.messageId);
  const scope = { agentId: input.agentId, conversationId: message.conversation_id };
  if (!run || !isActiveRun(run)) return { wait: waitOf(await pendingApproval(tx, scope), message.id) };
  const shown = await shownElicitations(tx, input.toolCallIds);
  // As text: a jsonb object would sort the requested schema's fields, which a form shows in order.
  const elicitations = JSON.stringify(shown);
  await markApprovalRequest(tx, message.id, { tool_call_ids: input.toolCallIds, elicitations });
  const calls = (message.tool_calls ?? [])
    .filter((call) => input.toolCallIds.includes(call.id))
    .map((call) => ({
      ...call,
      kind: 'elicitation' as const,
      elicitation: shown.find((e) => e.tool_call_id === call.id),
    }));
  const agent = await getAgentRow(tx, input.agentId);
  const wait = await enterPause(tx, { ...input, calls }, run, agent?.approval_timeout_seconds ?? null);
  return { wait, callbackUrl: run.callback_url };
}

/**
 * Records the answer of each call that does not run (a client tool's return, a denial) and returns the
 * calls that do: approved ones, those that asked their server's question, and those that never waited.
 */
async function recordAnswers(
  db: Queryable,
  answered: {
    calls: NonNullable<MessageRow['tool_calls']>;
    waiting: string[];
    answers: Map<string, ApprovalAnswer>;
    eliciting: string[];
    ids: { agentId: string; runId: string; timezone: string };
    imageMaxBytes?: number;
  },
): Promise<ResumePlan['toRun']> {
  const { calls, waiting, answers, eliciting, ids, imageMaxBytes } = answered;
  const toRun: ResumePlan['toRun'] = [];
  for (const call of calls) {
    const answer = answers.get(call.id);
    // A call that asked its server's question goes on with the answer, whatever it is.
    const runs = !waiting.includes(call.id) || eliciting.includes(call.id);
    if (runs || (answer?.type === 'approval' && answer.approve)) {
      toRun.push({ id: call.id, name: call.name });
    } else if (answer?.type === 'tool') {
      await recordResult(db, call, ids, {
        ok: answer.status === 'success',
        ...clientReturn(answer.tool_return, imageMaxBytes),
        stdout: answer.stdout,
        stderr: answer.stderr,
      });
    } else {
      await recordResult(db, call, ids, { ok: false, text: denialText(answer?.reason) });
    }
  }
  return toRun;
}

/**
 * The wait's end, or the answer that got there first, with the agent's tools and rules as they are now
 * (by digest, as an answer's signal carries them): the request it continues the turn with works with
 * them.
 */
async function expiredOrAnswered(
  tx: Queryable,
  input: { agentId: string; messageId: string },
): Promise<ApprovalAnswered | null> {
  const answered = await expireOrFindAnswer(tx, input);
  const agent = await getAgentRow(tx, input.agentId);
  if (!answered || !agent) return null;
  return { ...answered, contextDigest: await storeRequestPart(tx, await resolveTurnContext(tx, agent)) };
}

/**
 * The client tools among the calls to run: approved rather than answered with their return, which the
 * turn refuses, as a client tool runs only on the client.
 */
function clientToolsApproved(config: Record<string, unknown>, toRun: ResumePlan['toRun']): string[] {
  const clientNames = ((config.client_tools as ClientTool[] | undefined) ?? []).map((tool) => tool.name);
  return [...new Set(toRun.map((call) => call.name))].filter((name) => clientNames.includes(name));
}

/** The run type of the run under which an expired approval's calls are denied. */
const APPROVAL_TIMEOUT_RUN = 'approval_timeout';

/** The answer `applyApprovalAnswer` applies: its message, to the run it continues. */
interface AnswerToApply {
  agentId: string;
  runId: string;
  approvalMessageId: string;
}

export function approvalActivities({ db, startWebhook, imageMaxBytes }: ActivityDeps) {
  return {
    /**
     * The reminder delay of a pause's policy passed without an answer: the approval webhook is told
     * again (`approval_reminder`), unless an answer got there first.
     */
    async remindApproval(input: { agentId: string; messageId: string }): Promise<void> {
      const request = await requiredMessage(db, input.messageId);
      const scope = { agentId: input.agentId, conversationId: request.conversation_id };
      if ((await pendingApproval(db, scope))?.message_id !== input.messageId) return;
      await startWebhook({ kind: 'approval_reminder', id: input.messageId, agentId: input.agentId });
    },

    /**
     * The wait ran out: denies the pending calls under a new run, unless an answer got there first
     * (then that answer is returned, its signal being on the way).
     */
    async expireApproval(input: { agentId: string; messageId: string }): Promise<ApprovalAnswered | null> {
      const answered = await db.transaction((tx) => expiredOrAnswered(tx, input));
      const expiry = answered && (await getRun(db, answered.runId));
      if (expiry && expiry.metadata?.run_type === APPROVAL_TIMEOUT_RUN)
        await startWebhook({ kind: 'approval_expired', id: input.messageId, agentId: input.agentId });
      return answered;
    },

    /**
     * Cancel while paused: denies every pending call with Letta's cancel text and stores their
     * returns. Returns the run of an answer that was accepted meanwhile, which ends cancelled too.
     */
    async denyOnCancel(input: { agentId: string; runId: string; messageId: string }): Promise<string | null> {
      return db.transaction((tx) => denyPauseOnCancel(tx, input));
    },

    /**
     * Tool calls of the reply `messageId` wait for their MCP servers' elicitations (recorded by their
     * activities): the reply becomes an approval request for them, showing what each server asks, and
     * the run pauses as for an approval. Entered once: a retry finds the pause and its wait.
     */
    async pauseForElicitation(input: ElicitationPauseInput): Promise<ApprovalWait> {
      const wait = await db.transaction((tx) => enterElicitationPause(tx, input));
      if ('callbackUrl' in wait) {
        const { agentId, runId } = input;
        if (wait.callbackUrl) await startRunCallback(startWebhook, { agentId, runId });
        await startWebhook({ kind: 'approval_requested', id: input.messageId, agentId });
      }
      return wait.wait;
    },

    /**
     * Applies an answer: client returns are used verbatim, denials become Letta's error returns, and
     * the approved calls (with those of the reply that never needed approval) are left to run.
     */
    async applyApprovalAnswer(input: AnswerToApply): Promise<ResumePlan> {
      const approval = await requiredMessage(db, input.approvalMessageId);
      const meta = approval.metadata as { request_message_id: string };
      const request = await requiredMessage(db, meta.request_message_id);
      const waiting = (request.metadata?.approval_request as { tool_call_ids: string[] }).tool_call_ids;
      const answers = new Map((approval.approvals as ApprovalAnswer[]).map((a) => [a.tool_call_id, a]));
      const agent = await getAgentRow(db, input.agentId);
      const ids = { agentId: input.agentId, runId: input.runId, timezone: agent?.timezone ?? 'UTC' };
      const calls = request.tool_calls ?? [];
      const eliciting = await answeredElicitations(db, waiting);
      const toRun = await recordAnswers(db, { calls, waiting, answers, eliciting, ids, imageMaxBytes });
      const config = (await getRun(db, input.runId))?.request_config ?? {};
      const approvedClientTools = clientToolsApproved(config, toRun);
      return {
        messageId: request.id,
        stepId: request.step_id ?? request.id,
        callIds: calls.map((c) => c.id),
        toRun,
        ...(approvedClientTools.length ? { clientTools: approvedClientTools.map((name) => ({ name })) } : {}),
        maxSteps: (config.max_steps as number | undefined) ?? DEFAULT_MAX_STEPS,
        streamTokens: config.stream_tokens === true,
      };
    },
  } satisfies ApprovalActivities;
}
