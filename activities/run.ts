/**
 * Bookkeeping of a run: its end, queued runs cancelled, the calls that do not run, and the agent's
 * tools and rules it works with.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { newId } from '../src/ids';
import { getAgentRow, setLastStopReason } from '../src/db/agents';
import { insertMessage } from '../src/db/messages';
import { cancelUnstartedRuns, finishRun as storeRunOutcome } from '../src/db/runs';
import type { RunStatus } from '../src/db/rows';
import { packageFunctionResponse, unpackageFunctionResponse } from '../src/returns/tool-returns';
import type { Queryable } from '../src/db';
import { startRunCallback, type ActivityDeps } from './deps';
import type { FinishRunInput, RejectToolCallInput, ToolOutcome, TurnContext } from '../contracts/payloads';
import { readRequestPart } from '../src/db/request-parts';
import { releaseCancelledPause } from './approvals';
import { flushToolReturns, usageRecord } from './run-records';
import { releaseLane } from '../src/db/lanes';
import type { RunActivities } from '../contracts/activities';
import { observeRunEnd } from '../src/observability/metrics';
import { recordUnrunClaimed } from './tool-claim';
import { outcomeOf } from './tool-call';

/** Letta's run status for a stop reason (StopReasonType.run_status). */
export function runStatusFor(stopReason: string): RunStatus {
  if (stopReason === 'cancelled') return 'cancelled';
  return ['end_turn', 'max_steps', 'tool_rule', 'requires_approval'].includes(stopReason)
    ? 'completed'
    : 'failed';
}

/**
 * Stores a run's end in `tx`, a transaction that locks the run's row first (its notification goes out
 * with the tool message): a cancelled run also releases a pause its model call may have entered
 * meanwhile. The run ends its turn, which gives its conversation's lane back: `laneWaited` names the
 * conversation when its session waits for it (the caller wakes it once committed).
 */
export async function storeRunEnd(tx: Queryable, input: FinishRunInput) {
  const { lane, createdAt, ...outcome } = await storeRunOutcome(tx, input.runId, {
    status: runStatusFor(input.stopReason),
    stopReason: input.stopReason,
    usage: usageRecord(input.usage),
    error: input.error && { error_type: input.error.type, message: input.error.message },
  });
  observeRunEnd(input.stopReason, createdAt);
  if (input.stopReason === 'cancelled') await releaseCancelledPause(tx, input.agentId, input.runId);
  await flushToolReturns(tx, input.agentId, input.runId, input.pendingToolCallIds, input.followUpsFrom);
  await setLastStopReason(tx, input.agentId, input.stopReason);
  const scope = { agentId: input.agentId, conversationId: lane?.conversation_id ?? null };
  const { waited } = lane ? await releaseLane(tx, scope, lane.workflow_id) : { waited: false };
  return { ...outcome, laneWaited: waited ? scope : undefined };
}

export function runActivities({ db, startWebhook, laneReleased }: ActivityDeps) {
  return {
    /** Turns cancelled before they started: their runs end cancelled, having stored nothing. */
    async cancelQueuedRuns({ runIds }: { runIds: string[] }): Promise<void> {
      await cancelUnstartedRuns(db, { ids: runIds });
    },

    /**
     * A tool call that does not run (a broken rule, an unknown tool, an activity that failed after its
     * retries): the model gets `reason` as an error. Recorded under the call's claim, so an attempt
     * still holding it (a hung worker's) is waited for, and whichever records first is the result.
     */
    async rejectToolCall(input: RejectToolCallInput): Promise<ToolOutcome> {
      const agent = await getAgentRow(db, input.agentId);
      const { recorded } = await recordUnrunClaimed(db, {
        tool_call_id: input.toolCallId,
        run_id: input.runId,
        agent_id: input.agentId,
        tool_name: input.toolName,
        status: 'error',
        func_return: packageFunctionResponse(false, input.reason, agent?.timezone),
        stdout: null,
        stderr: null,
      });
      // An attempt that recorded first: the turn goes on with its result.
      const refused =
        recorded.status === 'error' && unpackageFunctionResponse(recorded.func_return) === input.reason;
      return refused ? { status: 'error' } : outcomeOf(recorded);
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

    /** Ends the run (see storeRunEnd); its callback's delivery starts from here. */
    async finishRun(input: FinishRunInput): Promise<void> {
      const { callbackUrl, laneWaited } = await db.transaction((tx) => storeRunEnd(tx, input));
      if (laneWaited) await laneReleased(laneWaited);
      if (callbackUrl) await startRunCallback(startWebhook, input);
    },

    /**
     * The agent's tools and rules as stored under `digest` when a request came (src/agent/turns.ts): a
     * request part's name is its content, so this is exactly what the request was given, whenever it
     * is read.
     */
    async loadTurnContext(input: { agentId: string; digest: string }): Promise<TurnContext> {
      const context = await readRequestPart<TurnContext>(db, input.digest);
      if (!context)
        throw ApplicationFailure.nonRetryable(
          `the tools and rules of agent ${input.agentId} stored as ${input.digest} do not exist`,
          'TurnContextGone',
        );
      return context;
    },
  } satisfies RunActivities;
}
