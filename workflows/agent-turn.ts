/**
 * One agent turn: a request's messages through to the agent's answer. A turn runs steps (Letta's: one
 * model call, then the calls of its reply, each by its tool's execution mode) until a stop reason.
 * Every model call and tool call is an activity; this code only decides, so the history holds ids and
 * short summaries. Deterministic: no I/O, no clocks, no randomness here.
 *
 * The run's life is decided here, at the lines of `agentTurn`: a run ends (`endRun`), pauses for a
 * client's tool return or a person's approval (`markPaused`, `waitForAnswer`), is cancelled while it
 * waits (`endOnCancel`), and the request that answers goes on under its own run (`resumedBy`). A
 * pause can last weeks; the turn waits on the `approvalAnswered` signal for as long as it takes. A
 * step's decisions (what the model may call, which calls wait, whether the reply ends the run or pauses
 * it, what its calls lead to) are the pure functions of contracts/turn-decisions.ts, named in `runStep`.
 */
import {
  CancellationScope,
  condition,
  isCancellation,
  log,
  makeContinueAsNewFunc,
  patched,
  setCurrentDetails,
  setHandler,
  setWorkflowOptions,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type {
  AgentTurnError,
  CallModelInput,
  AgentTurnInput,
  AgentTurnLimits,
  AgentTurnResult,
  ApprovalAnswered,
  ApprovalWait,
  ClientTool,
  ContinuedSteps,
  ContinuedTurn,
  RunUsage,
  StepCall,
  StepReply,
  ToolOutcome,
  TurnContext,
  TurnTool,
} from '../contracts/payloads';
import { approvalAnsweredSignal } from '../contracts/messages';
import { stopReasonKey } from '../contracts/search-attributes';
import { addUsage, noUsage } from '../contracts/usage';
import { PAUSED } from '../contracts/stop-reasons';
import {
  approvalRules,
  constraintViolation,
  prefilledArgs,
  requiredToolAlert,
  carriedHistory,
  type ToolCallRecord,
} from '../contracts/tool-rules';
import {
  afterCalls,
  afterReply,
  modelChoices,
  waitingTools,
  type ModelChoices,
} from '../contracts/turn-decisions';
import { stopFor, turnActivities, type TurnActivities } from './turn-activities';
import { throughInterruptions } from './interrupted-activities';
import { tellWaiter } from './agent-message-call';
import { withClientTools, type ToolCallRequest } from './tool-calls';

/** What every part of one turn works with. */
interface Turn {
  agentId: string;
  limits: AgentTurnLimits;
  acts: TurnActivities;
  /** What the turn started with: continuing as new starts the next run with it. */
  input: AgentTurnInput;
  /**
   * Answers to the turn's pauses, by the reply they answer; the first one counts (a client's retry
   * repeats it). Kept whenever they come: after a worker crash, the signal can be delivered in the
   * same activation as the model call that paused, before the turn has reached its wait.
   */
  answers: Map<string, ApprovalAnswered>;
  /**
   * The agent message's call waiting for the turn's first run, if another agent's message started it;
   * cleared once told.
   */
  replyTo?: AgentTurnInput['replyTo'];
  /**
   * Whether this run of the turn has called the model: only then may it continue as new, so a server
   * that suggests it at once cannot make a turn continue forever without going on.
   */
  calledModel: boolean;
}

/** One request's share of the turn: its run, and what it asked for. */
interface Request {
  runId: string;
  maxSteps: number;
  /** Its client tools, when an older release's input or plan carried them (AgentTurnInput.clientTools). */
  clientTools: ClientTool[];
  /** Whether the request streams tokens (`stream_tokens`). */
  streamTokens?: boolean;
  /** The answer this request brought to the turn's pause. */
  answer?: ApprovalAnswered;
  /** Its tools and rules, as they came with it (AgentTurnInput.context, ApprovalAnswered.context). */
  context: TurnContext;
  /** The digest `context` is stored under, when known: an answer with the same one keeps it. */
  contextDigest?: string;
}

/** How a request's steps ended, and what is still to be stored for its run. */
interface RequestOutcome {
  stopReason: string;
  usage: RunUsage;
  /** Calls of the last reply whose returns are still to be stored as one tool message. */
  pendingToolCallIds: string[];
  followUpsFrom?: string;
  error?: AgentTurnError;
  /** The model call ended the run as it stored the final reply (`endsRunWhenFinal`). */
  runEnded?: boolean;
  /**
   * Set with `requires_approval`: the reply whose calls wait, which of them, and the wait its model
   * call entered (none when a cancel ended the run first: the cancel is on its way).
   */
  pause?: Pause;
  /**
   * Set when Temporal suggested continuing as new before this step: the request goes on from it, with
   * its calls so far as the tool rules read them.
   */
  continuesAt?: { step: number; history: ToolCallRecord[] };
}

interface Pause {
  messageId: string;
  calls: StepCall[];
  wait?: ApprovalWait;
  /** When the wait began, for a pause the turn carried over as it continued as new (workflow time). */
  waitStartedAt?: number;
}

/** The calls of one request so far, for the tool rules that depend on what was called. */
type Progress = { outcome: RequestOutcome; history: ToolCallRecord[] };

/**
 * The model call whose reply ends the request ends its run too, in the transaction that stores the
 * reply: no activity after it, so a plain turn is one model call (bench/where-the-time-goes.md).
 * Histories recorded without this patch run `finishRun` after it, and replay so.
 */
const MODEL_CALL_ENDS_RUN = 'model-call-ends-run';

/**
 * A run's end is a local activity, like the rest of the bookkeeping. Histories recorded before ended
 * it with a regular activity, and replay so.
 */
const FINISH_RUN_LOCALLY = 'finish-run-as-local-activity';

/**
 * A tool call whose MCP server asks the user something mid-call pauses the run as an approval does
 * (activities/mcp.ts). Histories recorded before it had no such calls.
 */
const ELICITATION_PAUSE = 'mcp-elicitation-pause';

/**
 * A turn continues as new when Temporal suggests it (its history's size or length past the server's
 * thresholds), at a pause before it waits and before a model call: a turn of any number of steps and
 * answers keeps a bounded history. Histories recorded before never did, and replay so.
 */
const CONTINUES_AS_NEW = 'turn-continues-as-new';

export async function agentTurn(input: AgentTurnInput): Promise<AgentTurnResult> {
  const turn: Turn = {
    agentId: input.agentId,
    limits: input.limits,
    acts: turnActivities(
      input.limits,
      { sandbox: input.sandboxTaskQueue, mcp: input.mcpTaskQueue },
      input.workflowId,
    ),
    input,
    answers: new Map(),
    replyTo: input.replyTo,
    calledModel: false,
  };
  setHandler(approvalAnsweredSignal, (received) => {
    if (!turn.answers.has(received.requestMessageId)) turn.answers.set(received.requestMessageId, received);
  });

  let request = await requestOf(turn, input);
  let outcome = await resumeOrStart(turn, request, input.continued);
  for (;;) {
    if (outcome.continuesAt !== undefined) return continueTurn(turn, request, outcome);
    if (!outcome.pause) return endRun(turn, request.runId, outcome);
    markPaused(outcome.pause);
    if (continuesWhilePaused(turn, outcome.pause)) return continueTurn(turn, request, outcome);
    const answer = await waitForAnswer(turn, outcome.pause);
    if (!answer) return endOnCancel(turn, request.runId, outcome);
    request = await resumedBy(turn, request, answer);
    outcome = await runSteps(turn, request);
  }
}

/**
 * The request a turn starts with: the input's own, or the one it carried as it continued as new, with
 * its tools and rules (loaded by their digest when the input does not hold them).
 */
const requestOf = async (turn: Turn, input: AgentTurnInput): Promise<Request> => ({
  runId: input.runId,
  maxSteps: input.continued?.maxSteps ?? input.limits.maxSteps,
  clientTools: input.clientTools ?? [],
  streamTokens: input.streamTokens,
  context: input.context ?? (await loadContext(turn, input.contextDigest!)),
  contextDigest: input.contextDigest,
});

/** A new turn runs its request's steps; a continued one takes up its pause or its next step. */
function resumeOrStart(
  turn: Turn,
  request: Request,
  continued: ContinuedTurn | undefined,
): Promise<RequestOutcome> | RequestOutcome {
  if (!continued) return runSteps(turn, request);
  const { usage, pause, steps } = continued;
  if (pause) return { stopReason: PAUSED, usage, pendingToolCallIds: [], pause };
  return runSteps(turn, request, { ...steps!, usage });
}

/**
 * Whether this run has gone on enough to continue as new: Temporal suggests it, or its history holds
 * the turn's `historyMaxEvents`, before which every workflow task costs more as the history grows.
 */
const continueAsNewSuggested = (turn: Turn) =>
  turn.calledModel && historyIsLong(turn.limits) && patched(CONTINUES_AS_NEW);

const historyIsLong = ({ historyMaxEvents }: AgentTurnLimits) => {
  const { continueAsNewSuggested: suggested, historyLength } = workflowInfo();
  return suggested || (historyMaxEvents !== undefined && historyLength >= historyMaxEvents);
};

/**
 * Whether the turn continues as new at a pause, before it waits: not once its answer has come (the
 * turn goes on with it), nor without a wait (its run ended by a cancel, which is on its way here).
 */
const continuesWhilePaused = (turn: Turn, pause: Pause) =>
  pause.wait !== undefined && !turn.answers.has(pause.messageId) && continueAsNewSuggested(turn);

/**
 * A request's steps: an answer to a pause first runs the calls it allows, then model → tools. `from`
 * takes up the steps of a request the turn carried as it continued as new. Before each model call the
 * request may stop to continue as new (`continuesAt`), its state plain data between two steps.
 */
async function runSteps(
  turn: Turn,
  request: Request,
  from?: ContinuedSteps & { usage: RunUsage },
): Promise<RequestOutcome> {
  const progress: Progress = {
    outcome: {
      stopReason: 'end_turn',
      usage: from?.usage ?? noUsage(),
      pendingToolCallIds: from?.pendingToolCallIds ?? [],
      followUpsFrom: from?.followUpsFrom,
    },
    history: from?.history ?? [],
  };
  const { outcome } = progress;
  try {
    if (request.answer) {
      const stopped = await runAnsweredCalls(turn, request, request.answer, progress);
      if (stopped) return stopped;
    }
    for (let step = from?.next ?? 0; step < request.maxSteps; step++) {
      if (continueAsNewSuggested(turn))
        return { ...outcome, continuesAt: { step, history: progress.history } };
      const stopped = await runStep(turn, request, step, progress);
      if (stopped) return stopped;
    }
    return { ...outcome, stopReason: 'max_steps' };
  } catch (error) {
    if (isCancellation(error)) return { ...outcome, stopReason: 'cancelled' };
    const { stopReason, error: failure } = stopFor(error);
    log.warn('agent turn failed', { stopReason, error: failure.message });
    return { ...outcome, stopReason, error: failure };
  }
}

/**
 * One step: the model's reply, then its calls by mode. Two decisions go with the model call, since
 * they are stored in the transaction that stores the reply: a final reply ends the run
 * (`endsRunWhenFinal`), and a reply calling any of the waiting tools pauses it. Returns how the request
 * ended, or nothing when it goes on to the next step.
 */
async function runStep(
  turn: Turn,
  request: Request,
  step: number,
  progress: Progress,
): Promise<RequestOutcome | undefined> {
  const { agentId, acts } = turn;
  const { runId, context } = request;
  const { outcome, history } = progress;
  const choices = modelChoices(context.toolRules, context.tools, history, step, request.maxSteps);
  const waiting = waitingTools(toolsOf(request), context.toolRules);
  const reply = await callModel(turn, request, step, outcome, choices, waiting);

  const next = afterReply(reply, waiting, choices.owedTools);
  switch (next.next) {
    case 'end':
      return { ...outcome, stopReason: next.stopReason, runEnded: next.runEnded };
    case 'alert':
      await acts.bookkeeping.appendUserMessage({
        agentId,
        runId,
        step,
        text: requiredToolAlert(next.owedTools),
      });
      return undefined;
    case 'pause':
      return {
        ...outcome,
        stopReason: PAUSED,
        pause: { messageId: reply.messageId, calls: next.calls, wait: reply.approvalWait },
      };
    case 'run':
      return runReplyCalls(turn, request, reply, choices.allowedTools, progress);
  }
}

/**
 * The model call of a step, with the tool rules' choices; its reply's usage counted, and the returns
 * it stored (`pendingToolCallIds`) no longer pending.
 */
async function callModel(
  turn: Turn,
  request: Request,
  step: number,
  outcome: RequestOutcome,
  choices: ModelChoices,
  waiting: string[],
): Promise<StepReply> {
  const { context } = request;
  setCurrentDetails(`Waiting for the model (step ${step + 1})`);
  const modelCall: CallModelInput = {
    agentId: turn.agentId,
    runId: request.runId,
    step,
    allowedTools: choices.allowedTools,
    toolChoice: choices.toolChoice,
    parallelToolCalls: context.parallelToolCalls,
    // Recorded under this name: it holds the client's tools too.
    approvalTools: waiting,
    approvalRules: approvalRules(context.toolRules),
    pendingToolCallIds: outcome.pendingToolCallIds,
    followUpsFrom: outcome.followUpsFrom,
    requestUsage: outcome.usage,
    streamTokens: request.streamTokens,
    endsRunWhenFinal: choices.owedTools.length === 0 && patched(MODEL_CALL_ENDS_RUN),
  };
  const reply: StepReply = await throughInterruptions(turn.limits.maxInterruptions, () =>
    turn.acts.model.callModel.executeWithOptions(
      { ...turn.acts.modelOptions, summary: `model ${context.model}` },
      [modelCall],
    ),
  );
  turn.calledModel = true;
  outcome.usage = addUsage(outcome.usage, reply.usage);
  outcome.pendingToolCallIds = [];
  outcome.followUpsFrom = undefined;
  return reply;
}

/** Runs a reply's calls: those the rules do not allow are rejected, the others run with their prefilled arguments. */
async function runReplyCalls(
  turn: Turn,
  request: Request,
  reply: StepReply,
  allowed: string[],
  progress: Progress,
): Promise<RequestOutcome | undefined> {
  const { agentId, acts } = turn;
  const { runId } = request;
  const rules = request.context.toolRules;
  const { history } = progress;
  progress.outcome.pendingToolCallIds = reply.toolCalls.map((call) => call.id);
  const outcomes = await runToolCalls(request, reply.toolCalls, (call) => {
    if (!allowed.includes(call.name)) {
      const reason = constraintViolation(rules, call.name, allowed, history);
      return acts.bookkeeping.rejectToolCall({
        agentId,
        runId,
        toolCallId: call.id,
        toolName: call.name,
        reason,
      });
    }
    const prefilled = prefilledArgs(rules, call.name, history);
    return acts.runToolCall(callOf(turn, request, reply, call, prefilled), toolOf(request, call.name));
  });
  return afterReplyCalls(turn, request, reply.messageId, reply.toolCalls, outcomes, progress);
}

/**
 * What the calls of a reply lead to (`afterCalls`): a pause when any of them waits for its MCP
 * server's elicitation, the request's end when one is terminal by the rules, otherwise nothing (the
 * turn goes on).
 */
async function afterReplyCalls(
  turn: Turn,
  request: Request,
  messageId: string,
  calls: StepCall[],
  outcomes: ToolOutcome[],
  { outcome, history }: Progress,
): Promise<RequestOutcome | undefined> {
  const rules = request.context.toolRules;
  const { next, made } = afterCalls(calls, outcomes, rules, () => patched(ELICITATION_PAUSE));
  history.push(...made);
  if (next.next === 'end') return { ...outcome, stopReason: next.stopReason };
  if (next.next === 'step') return undefined;
  const wait = await turn.acts.bookkeeping.pauseForElicitation({
    agentId: turn.agentId,
    runId: request.runId,
    messageId,
    toolCallIds: next.calls.map((call) => call.id),
    usage: outcome.usage,
  });
  return { ...outcome, stopReason: PAUSED, pause: { messageId, calls: next.calls, wait } };
}

/**
 * Runs the calls an answer allows (a call paused for its MCP server's elicitation gives the server the
 * answer); how the request ends when one of them pauses again or is terminal by the rules.
 */
async function runAnsweredCalls(
  turn: Turn,
  request: Request,
  answer: ApprovalAnswered,
  progress: Progress,
): Promise<RequestOutcome | undefined> {
  const { outcome } = progress;
  const { runId } = request;
  const plan = await turn.acts.bookkeeping.applyApprovalAnswer({
    agentId: turn.agentId,
    runId,
    approvalMessageId: answer.approvalMessageId,
  });
  request.maxSteps = plan.maxSteps;
  request.clientTools = plan.clientTools ?? [];
  request.streamTokens = plan.streamTokens;
  // Set before the calls run: should they fail or be cancelled, the run's end still stores a return
  // for each call of the reply.
  outcome.pendingToolCallIds = plan.callIds;
  outcome.followUpsFrom = answer.approvalMessageId;
  const outcomes = await runToolCalls(request, plan.toRun, (call) =>
    turn.acts.runToolCall(callOf(turn, request, plan, call), toolOf(request, call.name)),
  );
  return afterReplyCalls(turn, request, plan.messageId, plan.toRun, outcomes, progress);
}

/**
 * Runs a reply's calls: concurrently when every one of them allows parallel execution, otherwise in
 * order. Outcomes keep the calls' order.
 */
async function runToolCalls(
  request: Request,
  calls: StepCall[],
  run: (call: StepCall) => Promise<ToolOutcome>,
): Promise<ToolOutcome[]> {
  const { tools } = request.context;
  const parallel =
    calls.length > 1 && calls.every((call) => tools.find((t) => t.name === call.name)?.parallel === true);
  if (parallel) return Promise.all(calls.map((call) => run(call)));
  const outcomes: ToolOutcome[] = [];
  for (const call of calls) outcomes.push(await run(call));
  return outcomes;
}

/** A call of a reply as `runToolCall` (workflows/tool-calls.ts) takes it. */
const callOf = (
  turn: Turn,
  request: Request,
  reply: Pick<StepReply, 'messageId' | 'stepId'>,
  call: StepCall,
  prefilled?: Record<string, unknown>,
): ToolCallRequest => ({
  agentId: turn.agentId,
  runId: request.runId,
  stepId: reply.stepId,
  messageId: reply.messageId,
  toolCallId: call.id,
  toolName: call.name,
  prefilledArgs: prefilled,
});

/** The turn's tools with the request's client tools, which stand for server tools of their names. */
const toolsOf = (request: Request): TurnTool[] => withClientTools(request.clientTools, request.context.tools);

const toolOf = (request: Request, name: string) => toolsOf(request).find((t) => t.name === name);

/**
 * The run pauses: the model call ended it `requires_approval` as it stored the reply that waits
 * (`waitingTools`). The workflow is tagged and described so, within milliseconds of that.
 */
function markPaused(pause: Pause): void {
  setCurrentDetails(`Waiting for approval of ${pause.calls.map((c) => `${c.name} (${c.id})`).join(', ')}`);
  upsertSearchAttributes([{ key: stopReasonKey, value: PAUSED }]);
}

/**
 * Waits for the answer to a pause, once an agent message waiting for the run knows it paused; when its
 * policy's reminder delay passes first, a reminder notice goes out, and when the approval timeout
 * passes, the calls are denied. Both are durable timers. No answer when the turn is cancelled while it
 * waits.
 */
async function waitForAnswer(turn: Turn, pause: Pause): Promise<ApprovalAnswered | undefined> {
  await replied(turn);
  const { answers, acts, agentId } = turn;
  const answered = () => answers.has(pause.messageId);
  // The workflow's clock: the time of this workflow task, or of the one that paused before the turn
  // continued as new.
  const waitStarted = pause.waitStartedAt ?? Date.now();
  const left = (ms: number) => Math.max(ms - (Date.now() - waitStarted), 1);
  const reminderMs = pause.wait?.reminderMs;
  const timeoutMs = pause.wait?.timeoutMs ?? null;
  try {
    const reminds = reminderMs !== undefined && (timeoutMs === null || reminderMs < timeoutMs);
    if (reminds && !(await condition(answered, left(reminderMs)))) {
      await acts.bookkeeping.remindApproval({ agentId, messageId: pause.messageId });
    }
    if (timeoutMs !== null && !(await condition(answered, left(timeoutMs)))) {
      const expired = await acts.bookkeeping.expireApproval({ agentId, messageId: pause.messageId });
      if (expired && !answered()) answers.set(pause.messageId, expired);
    }
    await condition(answered);
    return answers.get(pause.messageId)!;
  } catch (error) {
    if (isCancellation(error)) return undefined;
    throw error;
  }
}

/**
 * The answer's request goes on with the turn, under its own run, with the tools it came with: those the
 * turn has when their digest is the same, else loaded once by it (signals carry the digest alone).
 */
async function resumedBy(turn: Turn, current: Request, answer: ApprovalAnswered): Promise<Request> {
  const { context, contextDigest } = answer;
  const request = { runId: answer.runId, maxSteps: turn.limits.maxSteps, clientTools: [], answer };
  if (context) return { ...request, context, contextDigest };
  if (contextDigest === current.contextDigest) return { ...request, context: current.context, contextDigest };
  return { ...request, context: await loadContext(turn, contextDigest!), contextDigest };
}

/**
 * A request's tools and rules, stored under `digest`. Loaded whatever a cancel: a turn cancelled as it
 * starts (a cancel that reaches a continued run in its first task) still needs them to end its run as
 * cancelled, which the cancel then does.
 */
const loadContext = (turn: Turn, digest: string) =>
  CancellationScope.nonCancellable(() =>
    turn.acts.bookkeeping.loadTurnContext({ agentId: turn.agentId, digest }),
  );

/**
 * The turn goes on in a new run of its workflow (same workflow id, so the API's signals, cancels and
 * queries, the session's wait for it and the conversation's lane follow it) with its request as plain
 * data: the pause it waits on, or the step it goes on with.
 */
function continueTurn(turn: Turn, request: Request, outcome: RequestOutcome): Promise<never> {
  const { pause, continuesAt, usage } = outcome;
  const continued: ContinuedTurn = {
    maxSteps: request.maxSteps,
    usage,
    ...(pause
      ? { pause: { ...pause, wait: pause.wait!, waitStartedAt: pause.waitStartedAt ?? Date.now() } }
      : {
          steps: {
            next: continuesAt!.step,
            pendingToolCallIds: outcome.pendingToolCallIds,
            followUpsFrom: outcome.followUpsFrom,
            history: carriedHistory(request.context.toolRules, continuesAt!.history),
          },
        }),
  };
  const next = makeContinueAsNewFunc<typeof agentTurn>({ workflowTaskTimeout: turn.limits.taskTimeoutMs });
  return next({
    ...turn.input,
    runId: request.runId,
    // The model calls read the request's client tools from its run.
    clientTools: undefined,
    streamTokens: request.streamTokens,
    // By digest, when the request has one: the next run loads it.
    context: request.contextDigest ? undefined : request.context,
    contextDigest: request.contextDigest,
    // Still to be told, when the first run has not stopped yet (a pause tells as its wait begins).
    replyTo: turn.replyTo,
    continued,
  });
}

/**
 * A cancel while the run waits: as Letta does, every pending call is denied and the run ends
 * cancelled; so does the run of an answer that came meanwhile.
 */
async function endOnCancel(turn: Turn, runId: string, outcome: RequestOutcome): Promise<AgentTurnResult> {
  const { acts, agentId } = turn;
  const answeredRun = await CancellationScope.nonCancellable(() =>
    acts.bookkeeping.denyOnCancel({ agentId, runId, messageId: outcome.pause!.messageId }),
  );
  const cancelled = { stopReason: 'cancelled', usage: outcome.usage, pendingToolCallIds: [] };
  if (answeredRun) await endRun(turn, answeredRun, { ...cancelled, usage: noUsage() });
  return endRun(turn, runId, cancelled);
}

/**
 * The run ends: the workflow is tagged with its stop reason, and the run stored as stopped, even while
 * cancelling. A final reply's model call stored the end with the reply already (`runEnded`).
 */
async function endRun(turn: Turn, runId: string, outcome: RequestOutcome): Promise<AgentTurnResult> {
  const { stopReason, usage, error } = outcome;
  setCurrentDetails(`Stopped: ${stopReason}`);
  upsertSearchAttributes([{ key: stopReasonKey, value: stopReason }]);
  if (outcome.runEnded) {
    await replied(turn);
    return { stopReason, usage };
  }
  const finisher = patched(FINISH_RUN_LOCALLY) ? turn.acts.bookkeeping : turn.acts.regularBookkeeping;
  await CancellationScope.nonCancellable(() =>
    finisher.finishRun({
      agentId: turn.agentId,
      runId,
      stopReason,
      usage,
      pendingToolCallIds: outcome.pendingToolCallIds,
      followUpsFrom: outcome.followUpsFrom,
      error,
    }),
  );
  await replied(turn);
  return { stopReason, ...(error ? { error } : {}), usage };
}

/**
 * Tells the agent message's call waiting for the turn's first run that the run has stopped, its end
 * stored: the turn's first pause or end is that run's, since every later request comes with an answer
 * to a pause. Once.
 */
async function replied(turn: Turn): Promise<void> {
  const waiter = turn.replyTo;
  turn.replyTo = undefined;
  await tellWaiter(waiter);
}

/**
 * Worker versioning (docs/upgrades.md): AUTO_UPGRADE. A turn paused for approval or a client tool
 * waits for weeks, across releases; pinned, it could only be answered by the release that started it,
 * and a server replaced in place (`npm start`) leaves none behind. The answer's workflow task runs on
 * the current release, which replays the turn's history: test/replay.test.ts checks that for every
 * committed history, and a change that cannot replay goes behind patched().
 */
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, agentTurn);
