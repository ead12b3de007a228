/**
 * The session's side of a conversation's lane (src/db/lanes.ts): taken before each turn it starts,
 * and given back for a turn it cancelled before the turn started.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import type { TurnServices } from '../src/agent/turns';
import { agentLockOnly } from '../src/db/agents';
import { findRunScope } from '../src/db/conversations';
import { releaseLane, takeLane } from '../src/db/lanes';
import { failAbandonedRuns, workflowRunAgeMs } from '../src/db/runs';
import type { Queryable } from '../src/db';
import type { LaneActivities, LaneHolder } from '../contracts/activities';

/**
 * Whether the workflow holding a lane can still give it back: it runs, or the API that took the lane
 * for it may still start it (AGENT_LANE_START_GRACE_MS).
 */
async function holderAlive(services: TurnServices, holder: string): Promise<boolean> {
  try {
    const { status } = await services.temporal.workflow.getHandle(holder).describe();
    return status.name === 'RUNNING';
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
    const ageMs = await workflowRunAgeMs(services.db, holder);
    return ageMs !== undefined && ageMs < services.config.AGENT_LANE_START_GRACE_MS;
  }
}

const underLock = <T>(services: TurnServices, turn: LaneHolder, work: (tx: Queryable) => Promise<T>) =>
  services.db.transaction(work, agentLockOnly(turn.agentId));

export function laneActivities(services: TurnServices) {
  return {
    /**
     * Takes the lane for the turn, or marks it waited on: true once taken. A holder that died without
     * giving it back (its workflow closed, or never started) is replaced.
     */
    async takeLaneTurn(turn: LaneHolder): Promise<boolean> {
      const scope = await findRunScope(services.db, turn.runId);
      // Its run is gone with its agent: the turn starts and fails on its own, as it did before lanes.
      if (!scope) return true;
      const holder = await underLock(services, turn, (tx) => takeLane(tx, scope, turn.workflowId));
      if (holder === undefined) return true;
      if (await holderAlive(services, holder)) return false;
      return underLock(services, turn, async (tx) => {
        if ((await takeLane(tx, scope, turn.workflowId, holder)) !== undefined) return false;
        await failAbandonedRuns(tx, holder);
        return true;
      });
    },

    /** Gives the lane back for a turn that will not run. */
    async giveLaneBack(turn: LaneHolder): Promise<void> {
      const scope = await findRunScope(services.db, turn.runId);
      if (scope) await releaseLane(services.db, scope, turn.workflowId);
    },
  } satisfies LaneActivities;
}
