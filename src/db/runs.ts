import type { Queryable } from './database';
import type { RunRow, RunStatus } from './rows';
import { json, pageOf, whereClause, type Page } from './sql';
import type { ConversationRef } from './conversations';

export async function insertRun(
  db: Queryable,
  run: Pick<RunRow, 'id' | 'agent_id' | 'background' | 'metadata' | 'request_config' | 'workflow_id'> &
    Partial<Pick<RunRow, 'input' | 'conversation_id' | 'callback_url'>>,
): Promise<RunRow> {
  const [row] = await db.query<RunRow>(
    `INSERT INTO runs (id, agent_id, status, background, metadata, request_config, workflow_id, input,
       conversation_id, callback_url)
     VALUES ($1, $2, 'created', $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
    [
      run.id,
      run.agent_id,
      run.background,
      json(run.metadata),
      json(run.request_config),
      run.workflow_id,
      json(run.input ?? null),
      run.conversation_id ?? null,
      run.callback_url ?? null,
    ],
  );
  return row;
}

/** How the delivery of the run's callback went (its last attempt). */
export async function recordCallback(
  db: Queryable,
  runId: string,
  outcome: { statusCode: number | null; error: string | null },
): Promise<void> {
  await db.query(
    `UPDATE runs SET callback_sent_at = now(), callback_status_code = $2, callback_error = $3 WHERE id = $1`,
    [runId, outcome.statusCode, outcome.error],
  );
}

export function getRun(db: Queryable, id: string): Promise<RunRow | undefined> {
  return db.query<RunRow>('SELECT * FROM runs WHERE id = $1', [id]).then((rows) => rows[0]);
}

/** The run's row, locked until the transaction ends. */
export async function lockRun(tx: Queryable, id: string): Promise<RunRow | undefined> {
  const [row] = await tx.query<RunRow>('SELECT * FROM runs WHERE id = $1 FOR UPDATE', [id]);
  return row;
}

/** A run that has not ended yet. */
export const isActiveRun = (run: Pick<RunRow, 'status'>) =>
  run.status === 'created' || run.status === 'running';

/**
 * Marks a run running (unless it ended meanwhile) and returns the messages it brought, which its turn
 * sends to the model and stores with the reply: every attempt, since an earlier one may have failed.
 */
export async function startRunWithInput(db: Queryable, id: string): Promise<RunRow['input']> {
  const [row] = await db.query<Pick<RunRow, 'input'>>(
    `UPDATE runs SET status = CASE WHEN status = 'created' THEN 'running' ELSE status END WHERE id = $1
     RETURNING input`,
    [id],
  );
  return row?.input ?? null;
}

/** Records how a run ended; an error lands in `metadata.error`, where Letta's runs keep it. */
export async function finishRun(
  db: Queryable,
  id: string,
  outcome: {
    status: RunStatus;
    stopReason: string;
    usage: Record<string, number>;
    error?: { error_type: string; message: string };
  },
): Promise<{
  callbackUrl: string | null;
  lane?: Pick<RunRow, 'workflow_id' | 'conversation_id'>;
  createdAt?: RunRow['created_at'];
}> {
  const [row] = await db.query<
    Pick<RunRow, 'callback_url' | 'workflow_id' | 'conversation_id' | 'created_at'>
  >(
    `UPDATE runs SET status = $2, stop_reason = $3, usage = $4, completed_at = coalesce(completed_at, now()),
       metadata = CASE WHEN $5::jsonb IS NULL THEN metadata
                       ELSE coalesce(metadata, '{}'::jsonb) || jsonb_build_object('error', $5::jsonb) END
     WHERE id = $1 RETURNING callback_url, workflow_id, conversation_id, created_at`,
    [id, outcome.status, outcome.stopReason, json(outcome.usage), json(outcome.error ?? null)],
  );
  return { callbackUrl: row?.callback_url ?? null, lane: row, createdAt: row?.created_at };
}

export interface RunFilters {
  agentId?: string;
  /** A conversation's runs; null: those of the agent's default conversation. */
  conversationId?: string | null;
  statuses?: RunStatus[];
  background?: boolean;
  stopReason?: string;
  active?: boolean;
}

export function listRuns(db: Queryable, filters: RunFilters, page: Page): Promise<RunRow[]> {
  const where = whereClause();
  if (filters.agentId) where.add('agent_id = ?', filters.agentId);
  if (filters.conversationId !== undefined)
    where.add('conversation_id IS NOT DISTINCT FROM ?', filters.conversationId);
  if (filters.statuses?.length) where.add('status = ANY(?)', filters.statuses);
  if (filters.active) where.add(`status IN ('created', 'running')`);
  if (filters.background !== undefined) where.add('background = ?', filters.background);
  if (filters.stopReason) where.add('stop_reason = ?', filters.stopReason);
  return pageOf<RunRow>(db, 'runs', where, page);
}

/**
 * A run of an agent's conversation (null: its default one) to follow: the one named, the one whose
 * request carried the message `otid`, or else the newest one still running.
 */
export async function conversationRun(
  db: Queryable,
  conversation: ConversationRef,
  which: { runId?: string | null; otid?: string | null },
): Promise<RunRow | undefined> {
  const where = whereClause();
  where.add('agent_id = ?', conversation.agentId);
  where.add('conversation_id IS NOT DISTINCT FROM ?', conversation.conversationId);
  if (which.runId) where.add('id = ?', which.runId);
  else if (which.otid) where.add('input @> ?::jsonb', JSON.stringify([{ otid: which.otid }]));
  else where.add(`status IN ('created', 'running')`);
  const [run] = await db.query<RunRow>(
    `SELECT * FROM runs ${where} ORDER BY created_at DESC, id DESC LIMIT 1`,
    where.params,
  );
  return run;
}

/**
 * Ends runs whose turns never started (dropped from their queue, or whose request failed half-way)
 * `cancelled`, having stored nothing; `which` names them by id or by their turn's workflow.
 */
export async function cancelUnstartedRuns(
  db: Queryable,
  which: { ids: string[] } | { workflowId: string },
): Promise<void> {
  const [column, value] =
    'ids' in which ? ['id = ANY($1)', which.ids] : ['workflow_id = $1', which.workflowId];
  await db.query(
    `UPDATE runs SET status = 'cancelled', stop_reason = 'cancelled', completed_at = now()
     WHERE ${column} AND status = 'created'`,
    [value],
  );
}

/** The error of a run whose turn's workflow ended without ending it. */
export const ABANDONED_RUN_ERROR = {
  type: 'internal_error',
  message: 'The agent turn ended without finishing its run',
} as const;

/**
 * The runs a turn's workflow left unfinished when it ended without ending them (terminated in the
 * Temporal UI, say), or never started: failed, as followRun reports them.
 */
export async function failAbandonedRuns(db: Queryable, workflowId: string): Promise<void> {
  await db.query(
    `UPDATE runs SET status = 'failed', stop_reason = 'error', completed_at = now(),
       metadata = coalesce(metadata, '{}'::jsonb) || jsonb_build_object('error', jsonb_build_object(
         'error_type', $2::text, 'message', $3::text))
     WHERE workflow_id = $1 AND status IN ('created', 'running')`,
    [workflowId, ABANDONED_RUN_ERROR.type, ABANDONED_RUN_ERROR.message],
  );
}

/** The run that started a turn's workflow; undefined when it has none. */
export async function firstRunOf(db: Queryable, workflowId: string): Promise<string | undefined> {
  const [run] = await db.query<{ id: string }>(
    'SELECT id FROM runs WHERE workflow_id = $1 ORDER BY created_at LIMIT 1',
    [workflowId],
  );
  return run?.id;
}

/** How long ago the first run of a turn's workflow was created; undefined when it has none. */
export async function workflowRunAgeMs(db: Queryable, workflowId: string): Promise<number | undefined> {
  const [run] = await db.query<{ age_ms: number }>(
    `SELECT extract(epoch FROM now() - created_at) * 1000 AS age_ms FROM runs WHERE workflow_id = $1
     ORDER BY created_at LIMIT 1`,
    [workflowId],
  );
  return run?.age_ms;
}

export async function deleteRun(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM runs WHERE id = $1', [id]);
}
