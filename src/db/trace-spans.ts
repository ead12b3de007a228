/** Finished spans of the traces that touched a run (migration 0031), and what Letta's trace routes read. */
import type { Queryable } from './database';

export interface SpanRow {
  span_id: string;
  trace_id: string;
  parent_span_id: string | null;
  name: string;
  kind: string;
  service_name: string;
  scope_name: string;
  scope_version: string | null;
  /** Nanoseconds since the epoch, as a decimal string (past 2^53). */
  start_ns: string;
  duration_ns: string;
  status_code: string;
  status_message: string;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
  events: { name: string; time_ns: string; attributes: Record<string, unknown> }[];
  links: { trace_id: string; span_id: string; trace_state: string; attributes: Record<string, unknown> }[];
  agent_id: string | null;
  run_id: string | null;
  step_id: string | null;
}

const COLUMNS = `span_id text, trace_id text, parent_span_id text, name text, kind text, service_name text,
  scope_name text, scope_version text, start_ns bigint, duration_ns bigint, status_code text,
  status_message text, attributes jsonb, resource jsonb, events jsonb, links jsonb, agent_id text,
  run_id text, step_id text`;

/** One statement for a batch; a span stored before (a retried export) is kept as it was. */
export async function insertSpans(db: Queryable, spans: SpanRow[]): Promise<void> {
  if (!spans.length) return;
  await db.query(
    `INSERT INTO trace_spans (span_id, trace_id, parent_span_id, name, kind, service_name, scope_name,
       scope_version, start_ns, duration_ns, status_code, status_message, attributes, resource, events,
       links, agent_id, run_id, step_id)
     SELECT * FROM jsonb_to_recordset($1::jsonb) AS s(${COLUMNS})
     ON CONFLICT (span_id) DO NOTHING`,
    [JSON.stringify(spans)],
  );
}

/** Removes spans older than the retention; returns how many. */
export async function pruneSpans(db: Queryable, retentionDays: number): Promise<number> {
  const rows = await db.query<{ count: string }>(
    `WITH gone AS (DELETE FROM trace_spans WHERE created_at < now() - make_interval(days => $1) RETURNING 1)
     SELECT count(*)::text AS count FROM gone`,
    [retentionDays],
  );
  return Number(rows[0]?.count ?? 0);
}

const SELECT = `SELECT span_id, trace_id, parent_span_id, name, kind, service_name, scope_name, scope_version,
  start_ns::text AS start_ns, duration_ns::text AS duration_ns, status_code, status_message, attributes,
  resource, events, links, agent_id, run_id, step_id FROM trace_spans`;

/** Every span of the traces a run's work is in, oldest first. */
export function runSpans(db: Queryable, runId: string, limit: number): Promise<SpanRow[]> {
  return db.query<SpanRow>(
    `${SELECT} WHERE trace_id IN (SELECT trace_id FROM trace_spans WHERE run_id = $1)
     ORDER BY start_ns, span_id LIMIT $2`,
    [runId, limit],
  );
}

/** The spans filed under a step: its model call and its tool calls. */
export function stepSpans(db: Queryable, stepId: string): Promise<SpanRow[]> {
  return db.query<SpanRow>(`${SELECT} WHERE step_id = $1 ORDER BY start_ns, span_id`, [stepId]);
}
