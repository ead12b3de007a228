import { temporal } from '@temporalio/proto';
import { localActivityTypes, scheduledActivities, type HistoryEvent } from './temporal';
import type { AgentTurnInput, ContinuedTurn } from '../../contracts/payloads';

/**
 * The branches of the turn, session and agent-message-call workflows an upgrade must not strand: each one a shape a
 * recorded history shows. The corpus's manifest names the branches each history covers
 * (`branches`), and test/replay.test.ts requires every branch here to be covered by a history that
 * has that shape, so a branch without a recording fails CI rather than an upgrade.
 */

type Events = HistoryEvent[];

const { RetryState } = temporal.api.enums.v1;

/** The activities that run tool calls (workflows/tool-calls.ts). */
const TOOL_ACTIVITIES = new Set([
  'runBuiltinTool',
  'runSandboxTool',
  'runMcpTool',
  'runCode',
  'messageAgents',
]);

const toolCalls = (events: Events) => scheduledActivities(events).filter((a) => TOOL_ACTIVITIES.has(a.type));

/** A timestamp or duration of the history, in milliseconds. */
const millis = (time: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(time?.seconds ?? 0) * 1000 + Math.floor((time?.nanos ?? 0) / 1e6);

/** The event that closed the activity scheduled as `eventId`, if any. */
const closeOf = (events: Events, eventId: number) =>
  events.find((e) =>
    [
      e.activityTaskCompletedEventAttributes,
      e.activityTaskFailedEventAttributes,
      e.activityTaskTimedOutEventAttributes,
      e.activityTaskCanceledEventAttributes,
    ].some((a) => Number(a?.scheduledEventId) === eventId),
  );

/** The LettaStopReason the workflow last set (workflows/turn-activities.ts, finishRequest). */
export function stopReasonOf(events: Events): string | undefined {
  const upserts = events
    .map((e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields)
    .map((fields) => fields?.LettaStopReason?.data)
    .filter((data): data is Uint8Array => Boolean(data));
  const last = upserts.at(-1);
  return last ? (JSON.parse(Buffer.from(last).toString('utf8')) as string) : undefined;
}

const typeOf = (events: Events) =>
  events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? undefined;
const turn = (events: Events) => ['agentTurn', 'agentStep'].includes(typeOf(events) ?? '');
const completed = (events: Events) => events.some((e) => e.workflowExecutionCompletedEventAttributes);
const cancelRequested = (events: Events) =>
  events.some((e) => e.workflowExecutionCancelRequestedEventAttributes);
const signalled = (events: Events, name: string) =>
  events.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === name);

/** Two tool calls of one reply, the second scheduled once the first had ended. */
function callsInOrder(events: Events): boolean {
  const models = scheduledActivities(events).filter((a) => a.type === 'callModel');
  const calls = toolCalls(events);
  return calls.some((first, i) => {
    const second = calls[i + 1];
    const close = closeOf(events, first.eventId);
    const sameReply = second && !models.some((m) => m.eventId > first.eventId && m.eventId < second.eventId);
    return sameReply && close !== undefined && Number(close.eventId) < second.eventId;
  });
}

/** Two tool calls scheduled by one workflow task: running at once. */
const callsInParallel = (events: Events) =>
  toolCalls(events).some((call, i, calls) => calls[i + 1]?.eventId === call.eventId + 1);

/**
 * A tool call that outlived its heartbeat timeout on its first attempt: it could only have done so
 * by heartbeating (heartbeats themselves are not history events).
 */
function heartbeatingCall(events: Events): boolean {
  return toolCalls(events).some(({ eventId }) => {
    const scheduled = events.find(
      (e) => Number(e.eventId) === eventId,
    )!.activityTaskScheduledEventAttributes!;
    const started = events.find(
      (e) => Number(e.activityTaskStartedEventAttributes?.scheduledEventId) === eventId,
    );
    const done = events.find(
      (e) => Number(e.activityTaskCompletedEventAttributes?.scheduledEventId) === eventId,
    );
    const timeoutMs = millis(scheduled.heartbeatTimeout);
    return (
      started?.activityTaskStartedEventAttributes?.attempt === 1 &&
      done !== undefined &&
      timeoutMs > 0 &&
      millis(done.eventTime) - millis(started.eventTime) > timeoutMs
    );
  });
}

/** The type of the local activity an event recorded (its marker), if it recorded one. */
const localActivityTypeOf = (event: HistoryEvent): string | undefined => localActivityTypes([event])[0];

/** The events that recorded a local activity of `type` (its markers). */
const localActivityEvents = (events: Events, type: string) =>
  events.filter((e) => localActivityTypeOf(e) === type);

const idOf = (event: HistoryEvent) => Number(event.eventId);

/** The first event after `after` that `has`, if any. */
const firstAfter = (events: Events, after: HistoryEvent, has: (e: HistoryEvent) => unknown) =>
  events.find((e) => idOf(e) > idOf(after) && has(e));

/**
 * A session's cancel (the cancelTurns update) while a child turn ran and another waited: the update
 * dropped the queued one (cancelQueuedRuns), then cancelled the child (a child-only
 * RequestCancelExternal), and completed only once the child had ended
 * (ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED). The child ends completed when it ends
 * its run cancelled, as turns do; canceled, had it not caught the cancel.
 */
const cancelledChildTurn = (events: Events) =>
  cancelledTurn(events, (cancel) => Boolean(cancel.childWorkflowOnly) && queuedTurnDropped(events));

/**
 * A session's cancel of its running turn by the turn's workflow id (not a child-only cancel of the run
 * it started), which reaches the turn in whichever run of its continue-as-new chain it is, completed
 * once the turn had ended.
 */
const cancelledTurnById = (events: Events) =>
  cancelledTurn(events, (cancel) => !cancel.childWorkflowOnly && !cancel.workflowExecution?.runId);

type CancelInitiated = NonNullable<
  HistoryEvent['requestCancelExternalWorkflowExecutionInitiatedEventAttributes']
>;

/** Whether a cancelSteps update dropped a queued turn (cancelQueuedRuns) before anything else. */
const queuedTurnDropped = (events: Events) => {
  const accepted = events.find(
    (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'cancelSteps',
  );
  return (
    accepted !== undefined &&
    localActivityEvents(events, 'cancelQueuedRuns').some((e) => idOf(e) > idOf(accepted))
  );
};

/**
 * A cancelSteps update that cancelled a child turn with a cancel `as` expects, and completed only once
 * that turn had ended.
 */
function cancelledTurn(events: Events, as: (cancel: CancelInitiated) => boolean): boolean {
  const accepted = events.find(
    (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'cancelSteps',
  );
  const cancel =
    accepted &&
    firstAfter(events, accepted, (e) => {
      const initiated = e.requestCancelExternalWorkflowExecutionInitiatedEventAttributes;
      return initiated && as(initiated);
    });
  if (!accepted || !cancel) return false;
  const updateId = accepted.workflowExecutionUpdateAcceptedEventAttributes!.acceptedRequest!.meta?.updateId;
  const child =
    cancel.requestCancelExternalWorkflowExecutionInitiatedEventAttributes!.workflowExecution?.workflowId;
  const childEnded = firstAfter(events, cancel, (e) =>
    [e.childWorkflowExecutionCanceledEventAttributes, e.childWorkflowExecutionCompletedEventAttributes].some(
      (closed) => closed?.workflowExecution?.workflowId === child,
    ),
  );
  const updateCompleted =
    childEnded &&
    firstAfter(
      events,
      childEnded,
      (e) => e.workflowExecutionUpdateCompletedEventAttributes?.meta?.updateId === updateId,
    );
  return Boolean(updateCompleted);
}

/** The marker of the patch `patchId` (a `patched()` call that took the new path), if recorded. */
const patchMarker = (events: Events, patchId: string) =>
  events.find((e) => {
    const marker = e.markerRecordedEventAttributes;
    const data = marker?.markerName === 'core_patch' && marker.details?.['patch-data']?.payloads?.[0]?.data;
    return data && (JSON.parse(Buffer.from(data).toString('utf8')) as { id?: string }).id === patchId;
  });

/** What a local activity's marker recorded it returned (null for nothing). */
function localActivityResult(marker: HistoryEvent): unknown {
  const data = marker.markerRecordedEventAttributes?.details?.result?.payloads?.[0]?.data;
  return data?.length ? JSON.parse(Buffer.from(data).toString('utf8')) : null;
}

/** The first input of the workflow, as it was started. */
function workflowInput(events: Events): Record<string, unknown> | undefined {
  const data = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
  return data?.length
    ? (JSON.parse(Buffer.from(data).toString('utf8')) as Record<string, unknown>)
    : undefined;
}

/**
 * A reply's calls of which one waits for its MCP server's elicitation: under the
 * `mcp-elicitation-pause` patch, the turn enters the pause with the pauseForElicitation local activity.
 */
function elicitationPause(events: Events): boolean {
  const patch = patchMarker(events, 'mcp-elicitation-pause');
  if (!patch) return false;
  return localActivityEvents(events, 'pauseForElicitation').some((e) => idOf(e) > idOf(patch));
}

/**
 * A tool call's activity whose last attempt was interrupted (it timed out on its heartbeat: its worker
 * died under it), run again behind the `run-interrupted-activities-again` patch: the same tool's
 * activity scheduled after it, the call's claim then taken over (workflows/interrupted-activities.ts).
 */
function interruptedCallRunAgain(events: Events): boolean {
  const patch = patchMarker(events, 'run-interrupted-activities-again');
  if (!patch) return false;
  const calls = toolCalls(events);
  return calls.some((call, i) => {
    const timedOut = closeOf(events, call.eventId)?.activityTaskTimedOutEventAttributes;
    const heartbeat =
      timedOut?.failure?.timeoutFailureInfo?.timeoutType ===
      temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT;
    return (
      heartbeat && calls.slice(i + 1).some((next) => next.type === call.type && next.eventId > idOf(patch))
    );
  });
}

/**
 * A tool call whose activity failed after its last attempt: the turn refuses the call with the failure
 * as its result (rejectToolCall, the next local activity after the failure) and goes on.
 */
function toolCallFailed(events: Events): boolean {
  return toolCalls(events).some(({ eventId }) => {
    const close = closeOf(events, eventId);
    if (
      close?.activityTaskFailedEventAttributes?.retryState !== RetryState.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED
    )
      return false;
    const next = firstAfter(events, close, (e) => localActivityTypeOf(e));
    return next !== undefined && localActivityTypeOf(next) === 'rejectToolCall';
  });
}

/**
 * A session's turn cancelled while it waited for its lane, before its child started: the cancelTurns
 * update cancelled it, and the turn ended its run (cancelQueuedRuns) and gave its lane back
 * (giveLaneBack) before the update completed.
 */
function turnCancelledBeforeStart(events: Events): boolean {
  const accepted = events.find(
    (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'cancelSteps',
  );
  if (!accepted) return false;
  const updateId = accepted.workflowExecutionUpdateAcceptedEventAttributes!.acceptedRequest!.meta?.updateId;
  const markers = events.filter((e) => idOf(e) > idOf(accepted) && localActivityTypeOf(e));
  const givenBack = markers.find(
    (e, i) =>
      localActivityTypeOf(e) === 'giveLaneBack' &&
      i > 0 &&
      localActivityTypeOf(markers[i - 1]) === 'cancelQueuedRuns',
  );
  const completed = (e: HistoryEvent) =>
    e.workflowExecutionUpdateCompletedEventAttributes?.meta?.updateId === updateId;
  return givenBack !== undefined && firstAfter(events, givenBack, completed) !== undefined;
}

/** A run_code call: the `code` mode's runCode activity, on the sandbox's task queue, completed. */
function runCodeCall(events: Events): boolean {
  const sandboxQueue = workflowInput(events)?.sandboxTaskQueue;
  return events.some((e) => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    return (
      scheduled?.activityType?.name === 'runCode' &&
      scheduled.taskQueue?.name === sandboxQueue &&
      Boolean(closeOf(events, idOf(e))?.activityTaskCompletedEventAttributes)
    );
  });
}

/**
 * A cancel of a paused turn that came with an answer: the answer was stored before the cancel's denial
 * looked (denyOnCancel returned the answer's run), and both runs ended cancelled (finishRun twice).
 */
function cancelledWithAnswer(events: Events): boolean {
  const denial = localActivityEvents(events, 'denyOnCancel').find(
    (e) => typeof localActivityResult(e) === 'string',
  );
  if (!denial) return false;
  const ends = localActivityEvents(events, 'finishRun').filter((e) => idOf(e) > idOf(denial));
  return cancelRequested(events) && ends.length === 2 && stopReasonOf(events) === 'cancelled';
}

/**
 * A reply without calls while required tools were uncalled: the turn told the model so
 * (appendUserMessage, the requiredToolAlert) and called it again.
 */
function requiredToolAlerted(events: Events): boolean {
  const alert = localActivityEvents(events, 'appendUserMessage')[0];
  const modelCalled = (e: HistoryEvent) =>
    e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel' ||
    localActivityTypeOf(e) === 'callModel';
  return alert !== undefined && firstAfter(events, alert, modelCalled) !== undefined;
}

/** The workflow types of the children a session started. */
const childTypes = (events: Events) =>
  events.map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowType?.name);

/** The workflow sent a signal of `name` to another workflow: a turn or session telling a waiting call. */
const signalledOut = (events: Events, name: string) =>
  events.some((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === name);

/** The turn cancelled the child running its agent-message call, and ended cancelled. */
const cancelledMidAgentMessage = (events: Events) =>
  cancelRequested(events) &&
  childTypes(events).includes('agentMessageCall') &&
  events.some((e) => e.requestCancelExternalWorkflowExecutionInitiatedEventAttributes?.childWorkflowOnly) &&
  stopReasonOf(events) === 'cancelled';

const messageCall = (events: Events) => typeOf(events) === 'agentMessageCall';
/** Where a turn that continued as new (or was taken up after its workflow ended) picked up, if it did. */
function continuedOf(events: Events): ContinuedTurn | undefined {
  const data = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
  return data ? (JSON.parse(Buffer.from(data).toString('utf8')) as AgentTurnInput).continued : undefined;
}

/** A tool call scheduled and not ended when the history was taken. */
const callRunning = (events: Events) =>
  !completed(events) && toolCalls(events).some((call) => !closeOf(events, call.eventId));

export const BRANCHES = {
  'step-end-turn': (events) => turn(events) && completed(events) && stopReasonOf(events) === 'end_turn',
  'step-calls-in-order': (events) => turn(events) && callsInOrder(events),
  'step-parallel-calls': (events) => turn(events) && callsInParallel(events),
  'step-rejected-call': (events) => turn(events) && localActivityTypes(events).includes('rejectToolCall'),
  'step-mid-tool-call': (events) => turn(events) && callRunning(events),
  'step-heartbeating-call': (events) => turn(events) && heartbeatingCall(events),
  'step-interrupted-call-run-again': (events) => turn(events) && interruptedCallRunAgain(events),
  'step-paused': (events) =>
    turn(events) && !completed(events) && stopReasonOf(events) === 'requires_approval',
  'step-approval-answered': (events) =>
    turn(events) && completed(events) && signalled(events, 'approvalAnswered'),
  'step-approval-expired': (events) =>
    turn(events) &&
    events.some((e) => e.timerFiredEventAttributes) &&
    localActivityTypes(events).includes('expireApproval'),
  'step-approval-reminded': (events) =>
    turn(events) &&
    events.some((e) => e.timerFiredEventAttributes) &&
    localActivityTypes(events).includes('remindApproval'),
  'step-cancelled-mid-tool': (events) =>
    turn(events) &&
    cancelRequested(events) &&
    events.some((e) => e.activityTaskCancelRequestedEventAttributes) &&
    stopReasonOf(events) === 'cancelled',
  'step-cancelled-while-paused': (events) =>
    turn(events) &&
    cancelRequested(events) &&
    localActivityTypes(events).includes('denyOnCancel') &&
    stopReasonOf(events) === 'cancelled',
  'step-model-failure': (events) =>
    turn(events) &&
    events.some((e) => e.activityTaskFailedEventAttributes) &&
    stopReasonOf(events) === 'llm_api_error',
  'step-max-steps': (events) => turn(events) && stopReasonOf(events) === 'max_steps',
  'step-elicitation-pause': (events) => turn(events) && elicitationPause(events),
  'step-tool-call-failed': (events) => turn(events) && toolCallFailed(events),
  'step-run-code': (events) => turn(events) && runCodeCall(events),
  'step-cancelled-with-answer': (events) => turn(events) && cancelledWithAnswer(events),
  'step-required-tool-alert': (events) => turn(events) && requiredToolAlerted(events),
  'step-continued-as-new': (events) =>
    turn(events) && Boolean(events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes),
  // The runs after it: taking up the pause, or the steps, of the request the turn was working on.
  'step-resumed-at-pause': (events) => turn(events) && continuedOf(events)?.pause !== undefined,
  'step-resumed-at-step': (events) => turn(events) && continuedOf(events)?.steps !== undefined,
  'session-steps': (events) =>
    typeOf(events) === 'agentSession' && events.some((e) => e.childWorkflowExecutionCompletedEventAttributes),
  'session-waits-for-lane': (events) =>
    typeOf(events) === 'agentSession' && signalled(events, 'laneReleased'),
  'session-continued-as-new': (events) =>
    typeOf(events) === 'agentSession' &&
    Boolean(events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes),
  'session-cancelled-step': (events) => typeOf(events) === 'agentSession' && cancelledChildTurn(events),
  'session-turn-cancelled-before-start': (events) =>
    typeOf(events) === 'agentSession' && turnCancelledBeforeStart(events),
  'session-cancels-turn-by-workflow-id': (events) =>
    typeOf(events) === 'agentSession' && cancelledTurnById(events),
  'session-starts-agent-turn': (events) =>
    typeOf(events) === 'agentSession' && childTypes(events).includes('agentTurn'),
  'session-tells-waiter': (events) =>
    typeOf(events) === 'agentSession' && signalledOut(events, 'messageRunStopped'),
  // Turns recorded before agent messages waited in a child workflow polled in this activity.
  'step-agent-message-activity': (events) =>
    turn(events) && scheduledActivities(events).some((a) => a.type === 'messageAgents'),
  'step-agent-message-call': (events) =>
    turn(events) && completed(events) && childTypes(events).includes('agentMessageCall'),
  'step-cancelled-mid-agent-message': (events) => turn(events) && cancelledMidAgentMessage(events),
  'step-tells-waiter': (events) =>
    turn(events) && completed(events) && signalledOut(events, 'messageRunStopped'),
  'step-paused-tells-waiter': (events) =>
    turn(events) &&
    !completed(events) &&
    stopReasonOf(events) === 'requires_approval' &&
    signalledOut(events, 'messageRunStopped'),
  'step-waiter-gone': (events) =>
    turn(events) && events.some((e) => e.signalExternalWorkflowExecutionFailedEventAttributes),
  'agent-message-call-signalled': (events) =>
    messageCall(events) && completed(events) && signalled(events, 'messageRunStopped'),
  'agent-message-call-looked': (events) =>
    messageCall(events) &&
    completed(events) &&
    !signalled(events, 'messageRunStopped') &&
    localActivityTypes(events).includes('lookAtMessageRuns'),
  'agent-message-call-cancelled': (events) =>
    messageCall(events) &&
    cancelRequested(events) &&
    events.some((e) => e.workflowExecutionCanceledEventAttributes),
  // Sessions recorded before turns had their name start them under the type `agentStep`.
  'session-starts-agent-step': (events) =>
    typeOf(events) === 'agentSession' && childTypes(events).includes('agentStep'),
} satisfies Record<string, (events: Events) => boolean>;

export type Branch = keyof typeof BRANCHES;

/** Whether `history` shows `branch`. */
export const shows = (branch: Branch, history: temporal.api.history.v1.IHistory): boolean =>
  BRANCHES[branch](history.events ?? []);
