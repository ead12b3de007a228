/** AG-UI's threads and runs, as this server keeps them (migration 0037). */
import type { Database, Queryable } from './database';
import { insertConversation } from './conversations';

/** The conversation an AG-UI thread of the agent is; undefined for a thread not seen yet. */
export async function threadConversation(
  db: Queryable,
  agentId: string,
  threadId: string,
): Promise<string | undefined> {
  const [row] = await db.query<{ conversation_id: string }>(
    'SELECT conversation_id FROM ag_ui_threads WHERE agent_id = $1 AND thread_id = $2',
    [agentId, threadId],
  );
  return row?.conversation_id;
}

/** Thrown inside a transaction to undo it: another request made the thread first. */
class ThreadTaken extends Error {}

/**
 * The thread's conversation, made with it the first time: the conversation and the thread's row are
 * inserted together, and a request that loses the race undoes its own and takes the winner's.
 */
export async function ensureThreadConversation(
  db: Database,
  thread: { agentId: string; threadId: string; conversationId: string },
): Promise<string> {
  const known = await threadConversation(db, thread.agentId, thread.threadId);
  if (known) return known;
  try {
    return await db.transaction(async (tx) => {
      await insertConversation(tx, {
        id: thread.conversationId,
        agent_id: thread.agentId,
        summary: `AG-UI thread ${thread.threadId}`.slice(0, 200),
        model: null,
        model_settings: null,
        hidden: false,
      });
      const [row] = await tx.query<{ conversation_id: string }>(
        `INSERT INTO ag_ui_threads (agent_id, thread_id, conversation_id) VALUES ($1, $2, $3)
         ON CONFLICT DO NOTHING RETURNING conversation_id`,
        [thread.agentId, thread.threadId, thread.conversationId],
      );
      if (!row) throw new ThreadTaken();
      return row.conversation_id;
    });
  } catch (error) {
    if (!(error instanceof ThreadTaken)) throw error;
    return (await threadConversation(db, thread.agentId, thread.threadId))!;
  }
}

export interface AgUiRunRef {
  agentId: string;
  threadId: string;
  agUiRunId: string;
}

/**
 * Claims an AG-UI run id for this request: true when it is new (this request starts its run), false
 * when another request claimed it before (its run is joined).
 */
export async function claimAgUiRun(db: Queryable, ref: AgUiRunRef): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO ag_ui_runs (agent_id, thread_id, ag_ui_run_id) VALUES ($1, $2, $3)
     ON CONFLICT DO NOTHING RETURNING ag_ui_run_id`,
    [ref.agentId, ref.threadId, ref.agUiRunId],
  );
  return rows.length === 1;
}

/** Records the run a claimed AG-UI run id started or answered. */
export async function settleAgUiRun(db: Queryable, ref: AgUiRunRef, runId: string): Promise<void> {
  await db.query(
    'UPDATE ag_ui_runs SET run_id = $4 WHERE agent_id = $1 AND thread_id = $2 AND ag_ui_run_id = $3',
    [ref.agentId, ref.threadId, ref.agUiRunId, runId],
  );
}

/** Gives a claim up: its request could not start a run, so the same id may be sent again. */
export async function releaseAgUiRun(db: Queryable, ref: AgUiRunRef): Promise<void> {
  await db.query(
    'DELETE FROM ag_ui_runs WHERE agent_id = $1 AND thread_id = $2 AND ag_ui_run_id = $3 AND run_id IS NULL',
    [ref.agentId, ref.threadId, ref.agUiRunId],
  );
}

/** The run a claimed AG-UI run id started: null while its request starts it; undefined: unclaimed. */
export async function agUiRunOf(db: Queryable, ref: AgUiRunRef): Promise<string | null | undefined> {
  const [row] = await db.query<{ run_id: string | null }>(
    'SELECT run_id FROM ag_ui_runs WHERE agent_id = $1 AND thread_id = $2 AND ag_ui_run_id = $3',
    [ref.agentId, ref.threadId, ref.agUiRunId],
  );
  return row ? row.run_id : undefined;
}

/** Which of `otids` the conversation's messages already carry (a frontend's message ids). */
export async function storedOtids(
  db: Queryable,
  scope: { agentId: string; conversationId: string | null },
  otids: string[],
): Promise<Set<string>> {
  if (!otids.length) return new Set();
  const rows = await db.query<{ otid: string }>(
    `SELECT otid FROM messages WHERE agent_id = $1 AND conversation_id IS NOT DISTINCT FROM $2
       AND otid = ANY($3)`,
    [scope.agentId, scope.conversationId, otids],
  );
  return new Set(rows.map((row) => row.otid));
}
