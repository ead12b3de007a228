/**
 * A conversation's lane: the one turn of it that may run, named by its workflow id in the row that
 * keeps the conversation's state (conversationHolder: the agent's row for its own history). Whoever
 * starts a turn takes the lane first: the API when the conversation is idle, the session before each
 * turn it runs (workflows/agent-session.ts). The turn gives it back in the transaction that ends its
 * last run. Each of these runs under the agent's lock (agentLock), so two can never both take it.
 */
import type { Queryable } from './database';
import { conversationHolder, type ConversationRef } from './conversations';
import type { RunRow } from './rows';

/**
 * Takes the lane for `workflowId` if no turn holds it and no other run of the conversation is still to
 * run or running (queued in its session, or a turn from before lanes). The caller holds the agent's lock.
 */
export async function takeIdleLane(
  tx: Queryable,
  ref: ConversationRef,
  run: Pick<RunRow, 'id' | 'workflow_id'>,
) {
  const { table, id } = conversationHolder(ref);
  const taken = await tx.query(
    `UPDATE ${table} SET lane_holder = $2 WHERE id = $1 AND lane_holder IS NULL
       AND NOT EXISTS (SELECT 1 FROM runs WHERE agent_id = $3 AND conversation_id IS NOT DISTINCT FROM $4
                         AND status IN ('created', 'running') AND id <> $5)
     RETURNING 1`,
    [id, run.workflow_id, ref.agentId, ref.conversationId, run.id],
  );
  return taken.length > 0;
}

/**
 * The session's try at the lane: taken for `workflowId` when free (or held by `replacing`, a holder
 * found dead); otherwise marked waited on, so that its holder signals the session as it gives it back.
 * The holder, or undefined once taken. The caller holds the agent's lock.
 */
export async function takeLane(
  tx: Queryable,
  ref: ConversationRef,
  workflowId: string,
  replacing?: string,
): Promise<string | undefined> {
  const { table, id } = conversationHolder(ref);
  const [row] = await tx.query<{ holder: string | null; taken: boolean }>(
    `UPDATE ${table} SET
       lane_holder = CASE WHEN lane_holder IS NULL OR lane_holder IN ($2, $3) THEN $2 ELSE lane_holder END,
       lane_waited = NOT (lane_holder IS NULL OR lane_holder IN ($2, $3))
     WHERE id = $1
     RETURNING lane_holder AS holder, NOT lane_waited AS taken`,
    [id, workflowId, replacing ?? workflowId],
  );
  return row && !row.taken ? (row.holder ?? undefined) : undefined;
}

/** The turn holding the lane, if one does. */
export async function laneHolder(q: Queryable, ref: ConversationRef): Promise<string | undefined> {
  const { table, id } = conversationHolder(ref);
  const [row] = await q.query<{ lane_holder: string | null }>(
    `SELECT lane_holder FROM ${table} WHERE id = $1`,
    [id],
  );
  return row?.lane_holder ?? undefined;
}

/**
 * Gives the lane back if `workflowId` holds it; a session waits for it when `waited` (read by a
 * sub-select, which sees the row as it was before this statement).
 */
export async function releaseLane(
  q: Queryable,
  ref: ConversationRef,
  workflowId: string,
): Promise<{ waited: boolean }> {
  const { table, id } = conversationHolder(ref);
  const [row] = await q.query<{ waited: boolean }>(
    `UPDATE ${table} SET lane_holder = NULL, lane_waited = false WHERE id = $1 AND lane_holder = $2
     RETURNING (SELECT lane_waited FROM ${table} WHERE id = $1) AS waited`,
    [id, workflowId],
  );
  return { waited: row?.waited ?? false };
}
