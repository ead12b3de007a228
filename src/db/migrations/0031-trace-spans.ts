import type { Migration } from './migration';

/**
 * Finished OpenTelemetry spans of the traces that touched a run (src/observability/span-store.ts), kept
 * for TRACE_RETENTION_DAYS: Letta's trace routes (a run's trace, a step's provider trace and metrics)
 * are answered from them. Times in nanoseconds since the epoch, as OpenTelemetry has them.
 */
export const traceSpans: Migration = {
  version: 31,
  name: 'trace spans',
  sql: `
    CREATE TABLE trace_spans (
      span_id text PRIMARY KEY,
      trace_id text NOT NULL,
      parent_span_id text,
      name text NOT NULL,
      kind text NOT NULL,
      service_name text NOT NULL,
      scope_name text NOT NULL,
      scope_version text,
      start_ns bigint NOT NULL,
      duration_ns bigint NOT NULL,
      status_code text NOT NULL,
      status_message text NOT NULL DEFAULT '',
      attributes jsonb NOT NULL,
      resource jsonb NOT NULL,
      events jsonb NOT NULL,
      links jsonb NOT NULL,
      agent_id text,
      run_id text,
      step_id text,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX trace_spans_trace ON trace_spans (trace_id, start_ns);
    CREATE INDEX trace_spans_run ON trace_spans (run_id) WHERE run_id IS NOT NULL;
    CREATE INDEX trace_spans_step ON trace_spans (step_id) WHERE step_id IS NOT NULL;
    CREATE INDEX trace_spans_created ON trace_spans (created_at);
  `,
};
