/**
 * What a messages request does to an agent turn: start one (store the input, create the run, start
 * its workflow), or answer a paused one (check the answer, store it, signal the workflow).
 */
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TurnSettings } from './settings';
import type { Database, Queryable } from '../db';
import { toolCallQueues, type TaskQueues } from '../temporal/task-queues';
import { conflict, invalid, notFound } from '../errors';
import { agentLock } from '../db/agents';
import type { ConversationRef } from '../db/conversations';
import { runsStarted } from '../observability/metrics';
import { cancelUnstartedRuns, deleteRun, firstRunOf, getRun, insertRun } from '../db/runs';
import { laneHolder, releaseLane, takeIdleLane } from '../db/lanes';
import type { AgentRow, PendingApproval, RunRow } from '../db/rows';
import { newId } from '../ids';
import { storedTurnContext } from './turn-context';
import { storeRequestPart } from '../db/request-parts';
import type { RequestContextEntry } from '../db/model-calls';
import { checkRequestContext } from './request-context';
import type {
  AgentTurnInput,
  ApprovalAnswered,
  ClientTool,
  QueuedTurn,
  RunUsage,
} from '../../contracts/payloads';
import { QUEUE_FULL } from '../../contracts/errors';
import type { Workflows } from '../../contracts/workflows';
import {
  approvalAnsweredSignal,
  cancelTurnsUpdate,
  enqueueTurnUpdate,
  laneReleasedSignal,
} from '../../contracts/messages';
import { agentIdKey, runIdKey } from '../../contracts/search-attributes';
import { getMessage } from '../db/messages';
import { turnWorkflowOptions } from '../../contracts/turn-options';
import {
  ALREADY_ANSWERED,
  answersMismatch,
  checkEditedArguments,
  NOTHING_PENDING,
  PENDING_APPROVAL_TEXT,
  recordAnswer,
  earlierAnswer,
  type ApprovalAnswer,
  type FollowUp,
} from '../approvals/answering';
import { lockPendingApproval } from '../db/conversations';
import type { ApprovalRecord, Answerer } from '../db/approval-requests';
import { noteIds } from '../context-ids';

/** What starting, answering and cancelling turns works with: the database, Temporal, where turns run. */
export interface TurnServices {
  db: Database;
  config: TurnSettings;
  temporal: Client;
  /** Carried by task queues and workflow ids (src/db/deployment.ts). */
  deploymentId: string;
  /** Where agent-turn workflows run (`agent`), custom tools (`sandbox`) and MCP tools (`mcp`). */
  taskQueues: TaskQueues;
}

/** The queues a turn's sandboxed and MCP calls are scheduled on, as its input carries them. */
function toolQueuesOfTurn(ctx: TurnServices): Pick<AgentTurnInput, 'sandboxTaskQueue' | 'mcpTaskQueue'> {
  const queues = toolCallQueues(ctx.taskQueues, ctx.config.TOOL_WORKER_POOLS);
  return { sandboxTaskQueue: queues.sandbox, mcpTaskQueue: queues.mcp };
}

/** What every messages request asks for, whether it starts a turn or answers a paused one. */
interface RequestOptions {
  agentId: string;
  /** The conversation the turn belongs to; null: the agent's default conversation. */
  conversationId: string | null;
  clientTools: ClientTool[];
  /**
   * Context for this request alone (an AG-UI run's `context`): every model call of its run shows it in
   * the system message (src/agent/request-context.ts); the transcript never holds it.
   */
  requestContext?: RequestContextEntry[];
  maxSteps: number;
  approvalTimeoutSeconds?: number | null;
  background: boolean;
  runType: string;
  /** Stream the model's replies token by token (`stream_tokens`). */
  streamTokens?: boolean;
}

export interface TurnRequest extends RequestOptions {
  userMessages: FollowUp[];
  /**
   * The run's id when the caller chose it (a message from another agent: one per call and recipient).
   * Asked again, the same turn is not queued twice.
   */
  runId?: string;
  /** Kept with the run beside its type (who sent a message from another agent). */
  metadata?: Record<string, unknown>;
  /** Where the run is POSTed once it ends (checked by the caller: src/agent/webhooks.ts). */
  callbackUrl?: string;
  /** Who sent it, for the Temporal UI, when not the API's caller (a schedule, another agent). */
  origin?: string;
  /**
   * The workflow that waits for the reply (an agent message's call): the turn signals it when the run
   * stops.
   */
  replyTo?: string;
}

export interface AnswerRequest extends RequestOptions {
  answers: ApprovalAnswer[];
  followUps: FollowUp[];
  /** Who answers, for the audit trail. */
  answeredBy: Answerer;
  /** Runs in the transaction that records the answer, before it (a signed link's single use). */
  within?: (tx: Queryable) => Promise<void>;
}

/** Whether the workflow that is to end a run still can: its turn runs, or waits its place in the queue. */
export type TurnLiveness = () => Promise<boolean>;

/** A turn's workflow runs; one not started yet waits in its session, if the session runs. */
function turnLiveness(ctx: TurnServices, sessionId: string, workflowId: string): TurnLiveness {
  const running = async (id: string) => {
    try {
      return (await ctx.temporal.workflow.getHandle(id).describe()).status.name === 'RUNNING';
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return undefined;
      throw error;
    }
  };
  return async () => (await running(workflowId)) ?? (await running(sessionId)) ?? false;
}

/** Whether the workflow that is to end `run` still can (a stream that resumes follows it so). */
export const runLiveness = (ctx: TurnServices, run: RunRow): TurnLiveness =>
  turnLiveness(
    ctx,
    sessionWorkflowIdFor(ctx.deploymentId, run.agent_id, run.conversation_id),
    run.workflow_id,
  );

/** Letta's `max_steps` when a request gives none. */
export const DEFAULT_MAX_STEPS = 50;

/** Turns a session runs before it continues as new (Temporal may suggest it sooner). */
const SESSION_TURNS_PER_RUN = 500;

/**
 * A run's own settings, read by the workflow when the run continues a paused turn. Its client tools
 * by name; their schemas a request part (src/db/request-parts.ts), stored once however many requests
 * send them, which the run's model calls read by `client_tools_digest`; its context entries, checked
 * against `maxContextBytes`, another, read by `request_context_digest`.
 */
async function requestConfig(tx: Queryable, request: RequestOptions, maxContextBytes: number) {
  const { clientTools, requestContext = [] } = request;
  checkRequestContext(requestContext, maxContextBytes);
  return {
    max_steps: request.maxSteps,
    client_tools: clientTools.map(({ name }) => ({ name })),
    ...(clientTools.length ? { client_tools_digest: await storeRequestPart(tx, clientTools) } : {}),
    ...(requestContext.length ? { request_context_digest: await storeRequestPart(tx, requestContext) } : {}),
    approval_timeout_seconds: request.approvalTimeoutSeconds ?? null,
    ...(request.streamTokens ? { stream_tokens: true } : {}),
  };
}

/**
 * The pending approval of the request's conversation, once its agent's row is locked (and read): the
 * default conversation's came with that row; another conversation's row is locked now.
 */
const pendingApprovalOfLocked = async (
  tx: Queryable,
  request: ConversationRef,
  agent: Pick<AgentRow, 'pending_approval'>,
): Promise<PendingApproval | null> =>
  request.conversationId ? lockPendingApproval(tx, request) : agent.pending_approval;

const pendingApprovalError = (pending: PendingApproval) =>
  conflict({
    code: 'PENDING_APPROVAL',
    message: PENDING_APPROVAL_TEXT,
    pending_request_id: pending.message_id,
  });

/**
 * Workflow ids carry the deployment (as its task queues do) and name the agent, so the Temporal UI lists
 * an agent's session and turns together.
 */
export const scopedId = (deploymentId: string, id: string) => (deploymentId ? `${deploymentId}/${id}` : id);

/** The workflow of one turn: its agent and the run that starts it. */
export const workflowIdFor = (deploymentId: string, agentId: string, runId: string) =>
  scopedId(deploymentId, `${agentId}/${runId}`);

/**
 * The workflow of a conversation's session, which runs its turns one at a time
 * (workflows/agent-session.ts): one for the agent's default conversation, one for each other.
 */
export const sessionWorkflowIdFor = (deploymentId: string, agentId: string, conversationId: string | null) =>
  scopedId(deploymentId, conversationId ? `${agentId}/${conversationId}` : agentId);

/** The limits a turn runs under, from the configuration of the API that queued it. */
function turnLimits(config: TurnServices['config'], maxSteps: number): AgentTurnInput['limits'] {
  return {
    maxSteps,
    modelTimeoutMs: config.MODEL_TIMEOUT_MS,
    modelMaxAttempts: config.MODEL_MAX_ATTEMPTS,
    modelRetryInitialMs: config.MODEL_RETRY_INITIAL_MS,
    toolTimeoutMs: config.TOOL_TIMEOUT_MS,
    toolMaxAttempts: config.TOOL_MAX_ATTEMPTS,
    maxInterruptions: config.ACTIVITY_MAX_INTERRUPTIONS,
    heartbeatTimeoutMs: config.ACTIVITY_HEARTBEAT_TIMEOUT_MS,
    mcpCallTimeoutMs: config.MCP_CALL_TIMEOUT_MS,
    mcpConnectTimeoutMs: config.MCP_CONNECT_TIMEOUT_MS,
    agentMessageTimeoutMs: config.AGENT_MESSAGE_TIMEOUT_MS,
    agentMessageLookMs: config.AGENT_MESSAGE_LOOK_MS,
    localToolCalls: config.LOCAL_TOOL_CALLS,
    localModelCalls: config.LOCAL_MODEL_CALLS,
    taskTimeoutMs: config.STEP_TASK_TIMEOUT_MS,
    historyMaxEvents: config.TURN_HISTORY_MAX_EVENTS,
  };
}

/**
 * Queues a turn in the agent's session (starting the session if none runs): the run and the messages
 * it brings are stored first, the messages going into the transcript only when the turn starts.
 * A full queue is a 409, and the run is gone again.
 */
export async function startAgentTurn(
  ctx: TurnServices,
  request: TurnRequest,
): Promise<{ run: RunRow; alive: TurnLiveness }> {
  const runId = request.runId ?? newId('run');
  noteIds({ agentId: request.agentId, runId });
  const workflowId = workflowIdFor(ctx.deploymentId, request.agentId, runId);
  const { run, context, queued, agentName, laneTaken } = await ctx.db.transaction(
    async (tx, [agent]: (AgentRow | undefined)[]) => {
      if (!agent) throw notFound(`Agent ${request.agentId}`);
      const context = await storedTurnContext(tx, agent, ctx.config.TURN_CONTEXT_MAX_BYTES);
      const earlier = request.runId ? await getRun(tx, runId) : undefined;
      // Started already: queued again, it would run twice (its session may have ended since).
      if (earlier)
        return {
          run: earlier,
          context,
          queued: earlier.status !== 'created',
          agentName: agent.name,
          // The first request took the lane for it: its turn starts (at most once) outside the session.
          laneTaken: (await laneHolder(tx, request)) === earlier.workflow_id,
        };
      const pending = await pendingApprovalOfLocked(tx, request, agent);
      if (pending) throw pendingApprovalError(pending);
      const row = await insertRun(tx, {
        id: runId,
        agent_id: request.agentId,
        background: request.background,
        metadata: { ...request.metadata, run_type: request.runType },
        request_config: await requestConfig(tx, request, ctx.config.REQUEST_CONTEXT_MAX_BYTES),
        workflow_id: workflowId,
        input: request.userMessages,
        conversation_id: request.conversationId,
        callback_url: request.callbackUrl ?? null,
      });
      return {
        run: row,
        context,
        queued: false,
        agentName: agent.name,
        laneTaken: await takeIdleLane(tx, request, row),
      };
    },
    agentLock(request.agentId),
  );
  const sessionId = sessionWorkflowIdFor(ctx.deploymentId, request.agentId, request.conversationId);
  const alive = turnLiveness(ctx, sessionId, workflowId);
  if (queued) return { run, alive };
  const { config } = ctx;
  const turn: QueuedTurn = {
    workflowId,
    ...turnMetadata(agentName, runId, request, config.STEP_SUMMARY_MESSAGE_CHARS),
    maxQueued: config.AGENT_MAX_QUEUED_MESSAGES,
    input: {
      agentId: request.agentId,
      runId,
      ...toolQueuesOfTurn(ctx),
      ...(request.streamTokens ? { streamTokens: true } : {}),
      contextDigest: context.digest,
      limits: turnLimits(config, request.maxSteps),
      ...(request.replyTo ? { replyTo: { workflowId: request.replyTo, runId } } : {}),
      workflowId,
    },
  };
  try {
    // Started here, the turn gets its tools and rules in its input (no activity to load them first);
    // queued, by their digest: the session's queue, which it carries as it continues as new, stays small.
    if (laneTaken) await startTurn(ctx, { ...turn, input: { ...turn.input, context: context.context } });
    else await enqueueTurn(ctx, sessionId, turn);
  } catch (error) {
    if (laneTaken) await releaseLane(ctx.db, request, workflowId);
    // A turn asked for again keeps its run: the first request may still be on its way.
    if (!request.runId) await deleteRun(ctx.db, runId);
    throw error;
  }
  runsStarted.inc();
  return { run, alive };
}

/**
 * Starts a turn whose conversation was idle: its lane taken, no session needs to order it. The same
 * workflow options as the session's child turns (workflows/agent-session.ts).
 */
async function startTurn(ctx: TurnServices, turn: QueuedTurn): Promise<void> {
  try {
    await ctx.temporal.workflow.start<Workflows['agentTurn']>('agentTurn', {
      taskQueue: ctx.taskQueues.agent,
      ...turnWorkflowOptions(turn),
      args: [turn.input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      // With the agent worker in this process (npm start), the start's response carries the first
      // workflow task to it: no trip through matching. Without one (--role=api), the SDK's core does
      // not ask for it, and the task goes through matching.
      requestEagerStart: true,
    });
  } catch (error) {
    // The same turn asked for again (a chosen run id): its first request started it.
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

/** The start of a text, on one line, cut at `chars` (none at 0). */
function excerpt(text: string, chars: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > chars ? `${line.slice(0, Math.max(chars - 1, 0))}${chars ? '…' : ''}` : line;
}

/**
 * What the Temporal UI shows of a turn: its summary (the agent's name and the start of the message,
 * STEP_SUMMARY_MESSAGE_CHARS of it) in lists, its details (Markdown) on the workflow's page. The
 * summary is the only text of a message in a history: the rest stays in the database.
 */
function turnMetadata(agentName: string, runId: string, request: TurnRequest, messageChars: number) {
  const text = excerpt(request.userMessages.map((m) => m.text).join(' '), messageChars);
  const conversation = request.conversationId ? `, conversation \`${request.conversationId}\`` : '';
  const details = [
    `**Agent** ${agentName} (\`${request.agentId}\`)`,
    `**Run** \`${runId}\` (${request.runType}${conversation})`,
    ...(request.origin ? [`**From** ${request.origin}`] : []),
  ];
  return { summary: text ? `${agentName}: ${text}` : agentName, details: details.join('\n\n') };
}

/**
 * The turn's update to its conversation's session, which the update starts if it does not run. A
 * running session takes a plain update, about a millisecond quicker than update-with-start (which the
 * server persists as a new workflow task rather than a speculative one): only a conversation idle past
 * AGENT_SESSION_IDLE_MS pays for the refused try. Both carry the run's id as the update's id: a
 * session takes a turn once, however often it is sent.
 */
async function enqueueTurn(ctx: TurnServices, sessionId: string, turn: QueuedTurn): Promise<void> {
  const update = { args: [turn] as [QueuedTurn], updateId: turn.input.runId };
  try {
    try {
      await ctx.temporal.workflow
        .getHandle<Workflows['agentSession']>(sessionId)
        .executeUpdate(enqueueTurnUpdate, update);
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
      await ctx.temporal.workflow.executeUpdateWithStart(enqueueTurnUpdate, {
        ...update,
        startWorkflowOperation: sessionStart(ctx, sessionId, turn.input.agentId),
      });
    }
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause;
    if (
      error instanceof WorkflowUpdateFailedError &&
      cause instanceof ApplicationFailure &&
      cause.type === QUEUE_FULL
    )
      throw conflict(cause.message);
    throw error;
  }
}

/** A conversation's session, started by the update of its first turn (or joined, if one runs by then). */
const sessionStart = (ctx: TurnServices, sessionId: string, agentId: string) =>
  new WithStartWorkflowOperation<Workflows['agentSession']>('agentSession', {
    workflowId: sessionId,
    taskQueue: ctx.taskQueues.agent,
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: [
      {
        agentId,
        idleMs: ctx.config.AGENT_SESSION_IDLE_MS,
        laneLookMs: ctx.config.AGENT_LANE_LOOK_MS,
        maxStepsPerRun: SESSION_TURNS_PER_RUN,
      },
    ],
    typedSearchAttributes: [{ key: agentIdKey, value: agentId }],
    staticSummary: `Session of ${agentId}: its turns, one at a time`,
  });

/**
 * Answers the turn the agent is paused in. The answer must cover exactly the pending calls; it is
 * stored (with a new run, under which the turn continues) before the workflow is signalled. The same
 * answer sent again finds the first one and signals again, which the workflow ignores.
 */
export async function answerPausedTurn(
  ctx: TurnServices,
  request: AnswerRequest,
): Promise<{ run: RunRow; alive: TurnLiveness }> {
  const { agentId } = request;
  const { answered, workflowId, lost } = await ctx.db.transaction(
    async (tx, [agent]: (AgentRow | undefined)[]) => {
      if (!agent) throw notFound(`Agent ${agentId}`);
      const pending = await pendingApprovalOfLocked(tx, request, agent);
      if (!pending) {
        const earlier = await earlierAnswer(tx, agentId, request.answers);
        if (!earlier) throw invalid(NOTHING_PENDING);
        if (!earlier.repeats) throw conflict(ALREADY_ANSWERED);
        const run = await getRun(tx, earlier.answered.runId);
        const context = await storedTurnContext(tx, agent, ctx.config.TURN_CONTEXT_MAX_BYTES);
        const answered = { ...earlier.answered, contextDigest: context.digest };
        return { answered, workflowId: run!.workflow_id, lost: undefined };
      }
      const answers = withLegacyIds(pending, request.answers);
      const mismatch = answersMismatch(pending, answers);
      if (mismatch) throw invalid(mismatch);
      const { context, digest } = await storedTurnContext(tx, agent, ctx.config.TURN_CONTEXT_MAX_BYTES);
      await checkEditedArguments(tx, pending, answers, context);
      await request.within?.(tx);
      const recorded = await recordAnswer(tx, {
        agentId,
        pending,
        answers,
        followUps: request.followUps,
        runId: newId('run'),
        newRun: {
          background: request.background,
          metadata: { run_type: request.runType },
          request_config: await requestConfig(tx, request, ctx.config.REQUEST_CONTEXT_MAX_BYTES),
        },
        answeredBy: request.answeredBy,
      });
      // The turn loads the context by its digest, and only when it differs from the one it has.
      const answered = { ...recorded, contextDigest: digest };
      return { answered, workflowId: pending.workflow_id, lost: { pending, agent } };
    },
    agentLock(agentId),
  );
  noteIds({ agentId, runId: answered.runId });
  const handle = ctx.temporal.workflow.getHandle<Workflows['agentTurn']>(workflowId);
  try {
    await handle.signal(approvalAnsweredSignal, answered);
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
    // The paused turn's workflow is gone (terminated, failed): it goes on from its pause, in the
    // database, with this answer. A repeated answer may find the turn long finished: its run tells.
    if (lost) await resumeLostTurn(ctx, { ...lost, answered });
  }
  const run = (await getRun(ctx.db, answered.runId))!;
  const sessionId = sessionWorkflowIdFor(ctx.deploymentId, agentId, run.conversation_id);
  return { run, alive: turnLiveness(ctx, sessionId, workflowId) };
}

/**
 * A paused turn whose workflow is gone (terminated in the Temporal UI, failed) is taken up from its
 * pause, which the database holds whole, as a turn that continued as new takes up its own: a new run
 * of its workflow id, with the answer that found it gone. So the answer is never a 500, and the
 * conversation is never left waiting on a turn that cannot answer.
 */
async function resumeLostTurn(
  ctx: TurnServices,
  lost: { pending: PendingApproval; agent: AgentRow; answered: ApprovalAnswered },
): Promise<void> {
  const { pending, agent, answered } = lost;
  const [paused, request, firstRunId] = await Promise.all([
    getRun(ctx.db, pending.run_id),
    getMessage(ctx.db, pending.message_id),
    firstRunOf(ctx.db, pending.workflow_id),
  ]);
  const maxSteps = (paused?.request_config?.max_steps as number | undefined) ?? DEFAULT_MAX_STEPS;
  const calls = (request?.tool_calls ?? [])
    .filter((call) => pending.tool_call_ids.includes(call.id))
    .map(({ id, name }) => ({ id, name }));
  const turn: QueuedTurn = {
    workflowId: pending.workflow_id,
    summary: `${agent.name}: taken up again at its pause`,
    details: `**Agent** ${agent.name} (\`${agent.id}\`)\n\n**Run** \`${pending.run_id}\`, paused; its workflow had ended`,
    maxQueued: ctx.config.AGENT_MAX_QUEUED_MESSAGES,
    input: {
      agentId: agent.id,
      runId: pending.run_id,
      ...toolQueuesOfTurn(ctx),
      ...(paused?.request_config?.stream_tokens === true ? { streamTokens: true } : {}),
      contextDigest: answered.contextDigest,
      limits: turnLimits(ctx.config, maxSteps),
      continued: {
        maxSteps,
        usage: runUsageOf(paused?.usage),
        // Its answer comes with it, so the wait ends at once.
        pause: { messageId: pending.message_id, calls, wait: { timeoutMs: null }, waitStartedAt: Date.now() },
      },
    },
  };
  const options = turnWorkflowOptions(turn);
  await ctx.temporal.workflow.signalWithStart<Workflows['agentTurn'], [ApprovalAnswered]>('agentTurn', {
    ...options,
    typedSearchAttributes: [
      { key: agentIdKey, value: agent.id },
      { key: runIdKey, value: firstRunId ?? pending.run_id },
    ],
    taskQueue: ctx.taskQueues.agent,
    args: [turn.input],
    signal: approvalAnsweredSignal,
    signalArgs: [answered],
  });
}

/** A run's usage as the turn counts it, from the record the run stores (run-records usageRecord). */
const runUsageOf = (usage: Record<string, number> | null | undefined): RunUsage => ({
  promptTokens: usage?.prompt_tokens ?? 0,
  completionTokens: usage?.completion_tokens ?? 0,
  cachedInputTokens: usage?.cached_input_tokens ?? 0,
  reasoningTokens: usage?.reasoning_tokens ?? 0,
  stepCount: usage?.step_count ?? 0,
});

/**
 * Answers a recorded pause by its id (the approval inbox, a signed link): in the background, under a
 * run of type `approval_answer` that continues the turn with the agent's settings.
 */
export const answerApprovalRequest = (
  ctx: TurnServices,
  record: Pick<ApprovalRecord, 'agent_id' | 'conversation_id'>,
  answer: Pick<AnswerRequest, 'answers' | 'answeredBy' | 'within'>,
) =>
  answerPausedTurn(ctx, {
    ...answer,
    agentId: record.agent_id,
    conversationId: record.conversation_id,
    followUps: [],
    clientTools: [],
    maxSteps: DEFAULT_MAX_STEPS,
    background: true,
    runType: 'approval_answer',
  });

/**
 * Cancels turns of a conversation (those of `workflowIds`, or all) and returns once they have ended:
 * its session drops queued ones and cancels the running one. A turn no session holds (one started on
 * its own, as turns were before sessions, or one whose session is gone) is cancelled directly, and
 * waited for.
 */
export async function cancelTurns(
  ctx: TurnServices,
  conversation: ConversationRef,
  workflowIds: string[],
  all: boolean,
): Promise<void> {
  // A turn the API started holds the lane outside the session.
  const holder = all ? await laneHolder(ctx.db, conversation) : undefined;
  if (holder) workflowIds = [...new Set([...workflowIds, holder])];
  try {
    const session = ctx.temporal.workflow.getHandle<Workflows['agentSession']>(
      sessionWorkflowIdFor(ctx.deploymentId, conversation.agentId, conversation.conversationId),
    );
    const { cancelled } = await session.executeUpdate(cancelTurnsUpdate, {
      args: [all ? {} : { workflowIds }],
    });
    workflowIds = workflowIds.filter((id) => !cancelled.includes(id));
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
  await Promise.all(workflowIds.map((id) => cancelOutsideSession(ctx, id)));
}

async function cancelOutsideSession(ctx: TurnServices, workflowId: string): Promise<void> {
  const handle = ctx.temporal.workflow.getHandle(workflowId);
  try {
    await handle.cancel();
    await handle.result().catch(() => undefined);
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
  // A run whose turn never started (its request failed half-way) ends with nothing stored.
  await cancelUnstartedRuns(ctx.db, { workflowId });
}

/**
 * Wakes the session of a conversation whose lane a turn gave back while the session waited for it. A
 * session gone meanwhile needs no wake, and one the signal misses (Temporal out of reach) looks again
 * on its own (AGENT_LANE_LOOK_MS): a failed wake must not fail the turn's last activity, whose run has
 * ended already.
 */
export async function signalLaneReleased(ctx: TurnServices, scope: ConversationRef): Promise<void> {
  const session = sessionWorkflowIdFor(ctx.deploymentId, scope.agentId, scope.conversationId);
  await ctx.temporal.workflow
    .getHandle<Workflows['agentSession']>(session)
    .signal(laneReleasedSignal)
    .catch(() => undefined);
}

/** Letta's legacy form: the one pending call answered by the approval request's message id. */
function withLegacyIds(pending: PendingApproval, answers: ApprovalAnswer[]): ApprovalAnswer[] {
  if (pending.tool_call_ids.length !== 1) return answers;
  return answers.map((a) =>
    a.tool_call_id === pending.message_id ? { ...a, tool_call_id: pending.tool_call_ids[0] } : a,
  );
}
