/**
 * Steps (Letta's: one model call of a run) are the assistant messages that hold the model's replies:
 * each carries its step id, model, usage and finish reason. Feedback on a step is kept with it.
 */
import type { Queryable } from './database';
import type { MessageRow } from './rows';
import { keysetPage, whereClause, type Page } from './sql';

export interface StepFilters {
  runId?: string;
  agentId?: string;
  model?: string;
  feedback?: 'positive' | 'negative';
  start?: Date;
  end?: Date;
  /** Steps given any of these tags with their feedback. */
  tags?: string[];
}

const STEP = "role = 'assistant' AND step_id IS NOT NULL";

/** A page of steps, by the order they were taken (cursors are step ids). */
export function listSteps(db: Queryable, filters: StepFilters, page: Page): Promise<MessageRow[]> {
  const where = whereClause();
  where.add(STEP);
  if (filters.runId) where.add('run_id = ?', filters.runId);
  if (filters.agentId) where.add('agent_id = ?', filters.agentId);
  if (filters.model) where.add("metadata->>'model' = ?", filters.model);
  if (filters.feedback) where.add("metadata->>'feedback' = ?", filters.feedback);
  if (filters.start) where.add('created_at >= ?', filters.start);
  if (filters.end) where.add('created_at <= ?', filters.end);
  if (filters.tags?.length) where.add("jsonb_exists_any(metadata->'tags', ?)", filters.tags);
  return keysetPage<MessageRow>(db, 'SELECT * FROM messages', where, page, {
    key: 'seq',
    cursor: `(SELECT seq FROM messages WHERE step_id = ? AND ${STEP})`,
  });
}

export async function getStep(db: Queryable, stepId: string): Promise<MessageRow | undefined> {
  const [row] = await db.query<MessageRow>(`SELECT * FROM messages WHERE step_id = $1 AND ${STEP}`, [stepId]);
  return row;
}

/** Every message of a step: the reply, and the returns of its calls. */
export function stepMessages(db: Queryable, stepId: string): Promise<MessageRow[]> {
  return db.query<MessageRow>('SELECT * FROM messages WHERE step_id = $1 ORDER BY seq', [stepId]);
}

export async function setStepFeedback(
  db: Queryable,
  stepId: string,
  feedback: { feedback?: 'positive' | 'negative' | null; tags?: string[] | null },
): Promise<void> {
  await db.query(
    `UPDATE messages SET metadata = coalesce(metadata, '{}'::jsonb) || $2::jsonb WHERE step_id = $1 AND ${STEP}`,
    [stepId, JSON.stringify(feedback)],
  );
}
