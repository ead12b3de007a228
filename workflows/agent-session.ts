/**
 * An agent's session: the one workflow per conversation that orders its turns. Every new message
 * reaches it as an Update (with update-with-start when no session runs: the first message starts it),
 * which queues the turn in arrival order, as Temporal saw the updates; the session runs the queued
 * turns one at a time, each as a child `agentTurn` workflow, waiting for one to end (a pause for
 * approval included) before it starts the next. So two tabs, a retrying client or two API replicas can
 * never run two turns of one conversation at once, and every turn sees the history the one before it
 * left.
 *
 * A turn runs only while it holds its conversation's lane (src/db/lanes.ts): the API starts a message's
 * turn itself, without the session, when the conversation is idle; the session takes the lane before
 * each turn it starts, and waits while a turn the API started holds it (its end signals
 * `laneReleased`; a holder that died without giving it back is found on a look every laneLookMs).
 *
 * A cancel is an Update too: it drops queued turns and cancels the running one, and completes only
 * once they have ended. The session continues as new when Temporal suggests it, carrying its queue, and
 * ends when no message came for a while (the next message starts it again).
 */
import {
  ApplicationFailure,
  ChildWorkflowCancellationType,
  CancellationScope,
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  setWorkflowOptions,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { LaneActivities, RunActivities } from '../contracts/activities';
import { QUEUE_FULL } from '../contracts/errors';
import type { agentTurn } from './agent-turn';
import type { AgentSessionInput, QueuedTurn } from '../contracts/payloads';
import { cancelTurnsUpdate, enqueueTurnUpdate, laneReleasedSignal } from '../contracts/messages';
import { turnWorkflowOptions } from '../contracts/turn-options';
import { tellWaiter } from './agent-message-call';

const { cancelQueuedRuns, takeLaneTurn, giveLaneBack } = proxyLocalActivities<RunActivities & LaneActivities>(
  {
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds', maximumAttempts: 20 },
  },
);

/** Histories from before lanes started each turn at once: they replay so. */
const LANES = 'conversation-lanes';

/**
 * The turn workflow's type: sessions recorded before it was named `agentTurn` started their turns as
 * `agentStep` (workflows/index.ts registers both), and replay so.
 */
const TURN_TYPE = 'agent-turn-type';

/**
 * A running turn is cancelled by its workflow id, which reaches whichever run of it waits: a turn
 * continues as new, and a cancel of the child its session started (by that first run) would find it
 * closed. Histories recorded before cancelled the child itself, and replay so.
 */
const CANCEL_BY_WORKFLOW_ID = 'cancel-turn-by-workflow-id';

/** How often a session started without `laneLookMs` looks whether its lane's holder is still alive. */
const LANE_LOOK_MS = 10_000;

export async function agentSession(input: AgentSessionInput): Promise<void> {
  const queue: QueuedTurn[] = [...(input.queue ?? [])];
  /** The turn running now, and how to cancel it: its scope, or once its workflow has started, that. */
  let running:
    { turn: QueuedTurn; scope: CancellationScope; ended: Promise<unknown>; started: boolean } | undefined;
  let laneReleased = false;
  /** Whether the turn taken off the queue still waits for its lane: it counts as queued. */
  let awaitingLane = false;
  setHandler(laneReleasedSignal, () => void (laneReleased = true));

  /** Takes the turn's lane, waiting while another turn holds it. */
  const waitForLane = async (turn: QueuedTurn) => {
    const holder = { agentId: input.agentId, runId: turn.input.runId, workflowId: turn.workflowId };
    awaitingLane = true;
    try {
      for (;;) {
        laneReleased = false;
        if (await takeLaneTurn(holder)) return;
        setCurrentDetails(`${turn.input.runId} waits for the turn that holds its conversation`);
        await condition(() => laneReleased, input.laneLookMs ?? LANE_LOOK_MS);
      }
    } finally {
      awaitingLane = false;
    }
  };

  setHandler(
    enqueueTurnUpdate,
    (turn) => {
      queue.push(turn);
      return { queued: queue.length };
    },
    {
      validator: (turn) => {
        const waiting = queue.length + (awaitingLane ? 1 : 0);
        if (waiting >= turn.maxQueued)
          throw ApplicationFailure.nonRetryable(
            `The agent has ${waiting} messages queued, the most it takes (AGENT_MAX_QUEUED_MESSAGES): try again once some are answered`,
            QUEUE_FULL,
          );
      },
    },
  );

  setHandler(cancelTurnsUpdate, async ({ workflowIds }) => {
    const chosen = (turn: QueuedTurn) => !workflowIds || workflowIds.includes(turn.workflowId);
    const dropped = queue.filter(chosen);
    queue.splice(0, queue.length, ...queue.filter((turn) => !chosen(turn)));
    if (dropped.length) {
      await cancelQueuedRuns({ runIds: dropped.map((turn) => turn.input.runId) });
      await Promise.all(dropped.map(({ input }) => tellWaiter(input.replyTo)));
    }
    const current = running && chosen(running.turn) ? running : undefined;
    if (current) {
      if (current.started && patched(CANCEL_BY_WORKFLOW_ID))
        await getExternalWorkflowHandle(current.turn.workflowId).cancel();
      else current.scope.cancel();
      await current.ended.catch(() => undefined);
    }
    return { cancelled: [...dropped, ...(current ? [current.turn] : [])].map((turn) => turn.workflowId) };
  });

  for (let turns = 0; ;) {
    setCurrentDetails(queue.length ? `${queue.length} messages waiting` : 'Waiting for a message');
    const woken = await condition(() => queue.length > 0, input.idleMs);
    if (!woken && allHandlersFinished()) return; // idle: the next message starts a new session
    if (!queue.length) continue;
    const turn = queue.shift()!;
    setCurrentDetails(`Running ${turn.input.runId} (${queue.length} waiting)`);
    const scope = new CancellationScope();
    const ended = scope.run(() => runTurn(turn, waitForLane, () => (running!.started = true)));
    running = { turn, scope, ended, started: false };
    await ended.catch(() => undefined); // the turn records its own outcome; a failure ends only it
    running = undefined;
    if (workflowInfo().continueAsNewSuggested || ++turns >= input.maxStepsPerRun) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof agentSession>({ ...input, queue });
    }
  }
}

/**
 * One turn as a child workflow of its own, with the run's id and search attributes, once it holds its
 * lane. Cancelled before it started, its run ends cancelled and the lane goes back.
 */
async function runTurn(
  turn: QueuedTurn,
  waitForLane: (turn: QueuedTurn) => Promise<void>,
  onStarted: () => void,
): Promise<void> {
  const lanes = patched(LANES);
  let child;
  try {
    if (lanes) await waitForLane(turn);
    child = await startChild<typeof agentTurn>(patched(TURN_TYPE) ? 'agentTurn' : 'agentStep', {
      ...turnWorkflowOptions(turn),
      args: [turn.input],
      // A cancel completes once the turn has ended: its run cancelled, its tool calls stopped.
      cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
    });
  } catch (error) {
    if (lanes && isCancellation(error))
      await CancellationScope.nonCancellable(async () => {
        await cancelQueuedRuns({ runIds: [turn.input.runId] });
        await tellWaiter(turn.input.replyTo);
        await giveLaneBack({
          agentId: turn.input.agentId,
          runId: turn.input.runId,
          workflowId: turn.workflowId,
        });
      });
    throw error;
  }
  onStarted();
  // Completes with the last run of the turn's continue-as-new chain.
  await child.result();
}

/**
 * Worker versioning (README "Upgrades"): AUTO_UPGRADE. A session lives as long as its agent is busy, a
 * turn paused for approval included (weeks), and continues as new: pinned, it would hold every old
 * release's workers up. Its next task runs on the current release, so a change to it must replay the
 * histories of test/fixtures/histories (test/replay.test.ts) or guard the new path with patched().
 */
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, agentSession);
