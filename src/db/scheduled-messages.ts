/** Scheduled messages (migration 0019): what each sends its agent, and on what schedule. */
import type { Queryable } from './database';
import type { InputMessage } from './rows';
import { json } from './sql';

export type MessageSchedule =
  { type: 'one-time'; scheduled_at: number } | { type: 'recurring'; cron_expression: string };

/** The request as it came (Letta's ScheduleCreateParams without its schedule), echoed back. */
export interface ScheduledRequest {
  messages: unknown[];
  callback_url?: string | null;
  include_return_message_types?: string[] | null;
  max_steps?: number | null;
}

export interface ScheduledMessageRow {
  id: string;
  agent_id: string;
  message: ScheduledRequest;
  input: InputMessage[];
  schedule: MessageSchedule;
  /** The Temporal Schedule that fires it. */
  schedule_id: string;
  created_at: Date;
}

export async function insertScheduledMessage(
  db: Queryable,
  row: Omit<ScheduledMessageRow, 'created_at'>,
): Promise<ScheduledMessageRow> {
  const [stored] = await db.query<ScheduledMessageRow>(
    `INSERT INTO scheduled_messages (id, agent_id, message, input, schedule, schedule_id)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
    [row.id, row.agent_id, json(row.message), json(row.input), json(row.schedule), row.schedule_id],
  );
  return stored;
}

export async function getScheduledMessage(
  db: Queryable,
  id: string,
): Promise<ScheduledMessageRow | undefined> {
  const [row] = await db.query<ScheduledMessageRow>('SELECT * FROM scheduled_messages WHERE id = $1', [id]);
  return row;
}

/** An agent's scheduled messages, oldest first, after the one `after` names. */
export function listScheduledMessages(
  db: Queryable,
  agentId: string,
  page: { after?: string; limit: number },
): Promise<ScheduledMessageRow[]> {
  return db.query<ScheduledMessageRow>(
    `SELECT * FROM scheduled_messages s WHERE agent_id = $1
       AND ($2::text IS NULL OR (created_at, id) > (SELECT created_at, id FROM scheduled_messages WHERE id = $2))
     ORDER BY created_at, id LIMIT $3`,
    [agentId, page.after ?? null, page.limit],
  );
}

export async function countScheduledMessages(db: Queryable, agentId: string): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM scheduled_messages WHERE agent_id = $1',
    [agentId],
  );
  return row.n;
}

export async function deleteScheduledMessage(db: Queryable, id: string): Promise<boolean> {
  return (await db.query('DELETE FROM scheduled_messages WHERE id = $1 RETURNING id', [id])).length > 0;
}
