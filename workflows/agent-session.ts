/**
 * An agent's session: the one workflow per agent that orders its steps. Every new message reaches it as
 * an Update (with update-with-start when no session runs: the first message starts it), which queues
 * the step in arrival order, as Temporal saw the updates; the session runs the queued steps one at a
 * time, each as a child `agentStep` workflow, waiting for one to end (a pause for approval included)
 * before it starts the next. So two tabs, a retrying client or two API replicas can never run two
 * steps of one agent at once, and every step sees the history the one before it left.
 *
 * A cancel is an Update too: it drops queued steps and cancels the running one, and completes only
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
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  setWorkflowOptions,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import { agentStep } from './agent-step';
import type { AgentSessionInput, QueuedStep } from '../activities/contracts';
import { cancelStepsUpdate, enqueueStepUpdate } from './messages';
import { agentIdKey, runIdKey } from './search-attributes';

type Activities = ReturnType<typeof createActivities>;

const { cancelQueuedRuns } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds', maximumAttempts: 20 },
});

/** Refusals the API turns into HTTP answers (see src/agent/steps.ts). */
export const QUEUE_FULL = 'AgentQueueFull';

export async function agentSession(input: AgentSessionInput): Promise<void> {
  const queue: QueuedStep[] = [...(input.queue ?? [])];
  /** The step running now, and how to cancel it. */
  let running: { step: QueuedStep; scope: CancellationScope; ended: Promise<unknown> } | undefined;

  setHandler(
    enqueueStepUpdate,
    (step) => {
      queue.push(step);
      return { queued: queue.length };
    },
    {
      validator: (step) => {
        if (queue.length >= step.maxQueued)
          throw ApplicationFailure.nonRetryable(
            `The agent has ${queue.length} messages waiting for their turn, the most it takes (AGENT_MAX_QUEUED_MESSAGES): try again once some are answered`,
            QUEUE_FULL,
          );
      },
    },
  );

  setHandler(cancelStepsUpdate, async ({ workflowIds }) => {
    const chosen = (step: QueuedStep) => !workflowIds || workflowIds.includes(step.workflowId);
    const dropped = queue.filter(chosen);
    queue.splice(0, queue.length, ...queue.filter((step) => !chosen(step)));
    if (dropped.length) await cancelQueuedRuns({ runIds: dropped.map((step) => step.input.runId) });
    const current = running && chosen(running.step) ? running : undefined;
    if (current) {
      current.scope.cancel();
      await current.ended.catch(() => undefined);
    }
    return { cancelled: [...dropped, ...(current ? [current.step] : [])].map((step) => step.workflowId) };
  });

  for (let steps = 0; ;) {
    setCurrentDetails(queue.length ? `${queue.length} messages waiting` : 'Waiting for a message');
    const woken = await condition(() => queue.length > 0, input.idleMs);
    if (!woken && allHandlersFinished()) return; // idle: the next message starts a new session
    if (!queue.length) continue;
    const step = queue.shift()!;
    setCurrentDetails(`Running ${step.input.runId} (${queue.length} waiting)`);
    const scope = new CancellationScope();
    const ended = scope.run(() => runStep(step));
    running = { step, scope, ended };
    await ended.catch(() => undefined); // the step records its own outcome; a failure ends only it
    running = undefined;
    if (workflowInfo().continueAsNewSuggested || ++steps >= input.maxStepsPerRun) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof agentSession>({ ...input, queue });
    }
  }
}

/** One step as a child workflow of its own, with the run's id and search attributes. */
async function runStep(step: QueuedStep): Promise<void> {
  const child = await startChild(agentStep, {
    workflowId: step.workflowId,
    args: [step.input],
    typedSearchAttributes: [
      { key: agentIdKey, value: step.input.agentId },
      { key: runIdKey, value: step.input.runId },
    ],
    staticSummary: step.summary,
    staticDetails: step.details,
    // A local tool call holds the step's workflow task; the worker renews it at 80% of this timeout,
    // which is when a cancel reaches the call.
    workflowTaskTimeout: step.input.limits.taskTimeoutMs,
    // A cancel completes once the step has ended: its run cancelled, its tool calls stopped.
    cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
  });
  await child.result();
}

/**
 * Worker versioning (README "Upgrades"): AUTO_UPGRADE. A session lives as long as its agent is busy, a
 * step paused for approval included (weeks), and continues as new: pinned, it would hold every old
 * release's workers up. Its next task runs on the current release, so a change to it must replay the
 * histories of test/fixtures/histories (test/replay.test.ts) or guard the new path with patched().
 */
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, agentSession);
