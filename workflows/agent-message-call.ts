/**
 * One call of an agent-message tool (the `agent` execution mode), a child workflow of its turn with id
 * `<turn's workflow id>/<tool call id>`, so the Temporal UI shows who called whom. Its messages are sent
 * (each a turn of its recipient's own, which is told to reply here: AgentTurnInput.replyTo); then the
 * call waits as workflows wait, holding no worker slot, until each recipient's turn signals that the
 * run carrying its message has stopped (ended, or paused for an approval), or AGENT_MESSAGE_TIMEOUT_MS
 * passes on a durable timer; then its replies are read and its result recorded like every tool call's.
 * A turn that dies without signalling (terminated in the Temporal UI) is found by a look at the runs
 * every `agentMessageLookMs`: the look ends the wait whatever signals do or do not come.
 */
import {
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  log,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  setWorkflowOptions,
} from '@temporalio/workflow';
import type { AgentMessageCallActivities } from '../contracts/activities';
import type { AgentMessageCallInput, AgentTurnLimits, ReplyTo, ToolOutcome } from '../contracts/payloads';
import { messageRunStoppedSignal } from '../contracts/messages';
import { toolOptions } from './tool-calls';

/** How often a call whose turn's limits name no interval looks at its recipients' runs. */
const LOOK_MS = 30_000;

function callActivities(limits: AgentTurnLimits) {
  return {
    // Sending starts or queues a turn per recipient (up to 100 of them): a regular activity that heartbeats.
    sending: proxyActivities<AgentMessageCallActivities>(toolOptions(limits, limits.toolTimeoutMs)),
    // A look and the record are a few statements each.
    local: proxyLocalActivities<AgentMessageCallActivities>({
      startToCloseTimeout: '30 seconds',
      retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds', maximumAttempts: 20 },
    }),
  };
}

export async function agentMessageCall({ call, limits }: AgentMessageCallInput): Promise<ToolOutcome> {
  const stopped = new Set<string>();
  // Set before anything is sent: a reply that comes before the wait starts is kept.
  setHandler(messageRunStoppedSignal, ({ runId }) => void stopped.add(runId));
  const { sending, local } = callActivities(limits);
  setCurrentDetails(`Sending the message of ${call.toolName}`);
  const sent = await sending.sendAgentMessages(call);
  const open = () => sent.awaited.filter((runId) => !stopped.has(runId));
  const deadline = Date.now() + limits.agentMessageTimeoutMs; // the workflow's clock
  for (let left = limits.agentMessageTimeoutMs; open().length && left > 0; left = deadline - Date.now()) {
    setCurrentDetails(`Waiting for the replies of ${open().join(', ')}`);
    if (await condition(() => open().length === 0, Math.min(left, limits.agentMessageLookMs ?? LOOK_MS)))
      break;
    for (const runId of await local.lookAtMessageRuns({ runIds: open() })) stopped.add(runId);
  }
  setCurrentDetails('Recording the replies');
  return local.recordAgentReplies({ ...call, sent, timeoutMs: limits.agentMessageTimeoutMs });
}

/**
 * The recipient's side: tells the call that waits for a run (its turn's `replyTo`) that the run has
 * stopped, once its end is stored. Sent even while the turn is being cancelled; a waiter that is gone
 * (its sender cancelled, its wait timed out) is no matter.
 */
export async function tellWaiter(replyTo: ReplyTo | undefined): Promise<void> {
  if (!replyTo) return;
  const { runId } = replyTo;
  await CancellationScope.nonCancellable(() =>
    getExternalWorkflowHandle(replyTo.workflowId)
      .signal(messageRunStoppedSignal, { runId })
      .catch((error: Error) => log.info('the waiting call is gone', { runId, error: error.message })),
  );
}

/**
 * Worker versioning (docs/upgrades.md): AUTO_UPGRADE, like the turn that starts it: a call waits as
 * long as its recipient's turn, across releases.
 */
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, agentMessageCall);
