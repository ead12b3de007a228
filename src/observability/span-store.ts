/**
 * Keeps the spans of traces that touched a run in the database, off the request path: a span processor
 * whose onEnd only queues. A trace is kept once one of its spans names a run (`letta.run.id`); its
 * spans that ended before that wait in memory for TRACE_BUFFER_MS, so the traces of health checks and
 * reads are never written. Batches go in one statement each; old spans are pruned hourly.
 */
import { SpanKind, SpanStatusCode, type Attributes, type HrTime } from '@opentelemetry/api';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Queryable } from '../db';
import { insertSpans, pruneSpans, type SpanRow } from '../db/trace-spans';
import type { ObservabilitySettings } from './settings';
import type { Logger } from '../logger';
import { ID_ATTRIBUTES } from '../context-ids';
import type { Tracing } from './tracing';

export interface SpanStoreOptions {
  retentionDays: number;
  /** How long the spans of a trace no run has been seen in yet wait for one. */
  bufferMs: number;
  flushMs: number;
  batchSize: number;
  /** The most spans held in memory, waiting or queued; past it the oldest waiting are dropped. */
  maxHeld: number;
}

const PRUNE_EVERY_MS = 60 * 60 * 1000;

/** How many kept traces are remembered, for their late spans. */
const MAX_KEPT_TRACES = 100_000;

const KINDS: Record<SpanKind, string> = {
  [SpanKind.INTERNAL]: 'Internal',
  [SpanKind.SERVER]: 'Server',
  [SpanKind.CLIENT]: 'Client',
  [SpanKind.PRODUCER]: 'Producer',
  [SpanKind.CONSUMER]: 'Consumer',
};

const STATUSES: Record<SpanStatusCode, string> = {
  [SpanStatusCode.UNSET]: 'Unset',
  [SpanStatusCode.OK]: 'Ok',
  [SpanStatusCode.ERROR]: 'Error',
};

const nanoseconds = ([seconds, nanos]: HrTime) =>
  (BigInt(seconds) * 1_000_000_000n + BigInt(nanos)).toString();

const text = (attributes: Attributes, key: string) => {
  const value = attributes[key];
  return typeof value === 'string' ? value : null;
};

/** A finished span as the table keeps it. */
export function spanRow(span: ReadableSpan): SpanRow {
  const { traceId, spanId } = span.spanContext();
  const scope = span.instrumentationLibrary;
  return {
    span_id: spanId,
    trace_id: traceId,
    parent_span_id: span.parentSpanId ?? null,
    name: span.name,
    kind: KINDS[span.kind] ?? 'Internal',
    service_name: String(span.resource.attributes['service.name'] ?? ''),
    scope_name: scope?.name ?? '',
    scope_version: scope?.version ?? null,
    start_ns: nanoseconds(span.startTime),
    duration_ns: nanoseconds(span.duration),
    status_code: STATUSES[span.status.code] ?? 'Unset',
    status_message: span.status.message ?? '',
    attributes: span.attributes,
    resource: span.resource.attributes,
    events: span.events.map((event) => ({
      name: event.name,
      time_ns: nanoseconds(event.time),
      attributes: event.attributes ?? {},
    })),
    links: span.links.map((link) => ({
      trace_id: link.context.traceId,
      span_id: link.context.spanId,
      trace_state: link.context.traceState?.serialize() ?? '',
      attributes: link.attributes ?? {},
    })),
    agent_id: text(span.attributes, ID_ATTRIBUTES.agentId),
    run_id: text(span.attributes, ID_ATTRIBUTES.runId),
    step_id: text(span.attributes, ID_ATTRIBUTES.stepId),
  };
}

export class SpanStore implements SpanProcessor {
  /** Traces known to touch a run, with when they last had a span. */
  private readonly kept = new Map<string, number>();
  /** Spans of traces not known to, by trace, with when the first arrived. */
  private readonly waiting = new Map<string, { since: number; spans: SpanRow[] }>();
  private queue: SpanRow[] = [];
  private held = 0;
  private writing: Promise<void> = Promise.resolve();
  private readonly flushTimer: NodeJS.Timeout;
  private readonly pruneTimer: NodeJS.Timeout;

  constructor(
    private readonly db: Queryable,
    private readonly options: SpanStoreOptions,
    private readonly log: Logger,
  ) {
    this.flushTimer = setInterval(() => void this.flush(), options.flushMs).unref();
    this.pruneTimer = setInterval(() => void this.prune(), PRUNE_EVERY_MS).unref();
    void this.prune();
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    const row = spanRow(span);
    const now = Date.now();
    if (row.run_id || this.kept.has(row.trace_id)) {
      this.keep(row.trace_id, now);
      const earlier = this.waiting.get(row.trace_id);
      this.waiting.delete(row.trace_id);
      this.queue.push(...(earlier?.spans ?? []), row);
      this.held += 1;
      if (this.queue.length >= this.options.batchSize) void this.flush();
      return;
    }
    const waiting = this.waiting.get(row.trace_id) ?? { since: now, spans: [] };
    waiting.spans.push(row);
    this.waiting.set(row.trace_id, waiting);
    this.held += 1;
    if (this.held > this.options.maxHeld) this.dropOldestWaiting();
  }

  /** Writes what is queued, in batches, one write at a time; forgets traces whose wait is over. */
  flush(): Promise<void> {
    this.expire(Date.now());
    this.writing = this.writing.then(async () => {
      while (this.queue.length) {
        const batch = this.queue.splice(0, this.options.batchSize);
        this.held -= batch.length;
        await insertSpans(this.db, batch).catch((error: Error) =>
          this.log.warn({ error: error.message, spans: batch.length }, 'could not store trace spans'),
        );
      }
    });
    return this.writing;
  }

  forceFlush(): Promise<void> {
    return this.flush();
  }

  async shutdown(): Promise<void> {
    clearInterval(this.flushTimer);
    clearInterval(this.pruneTimer);
    await this.flush();
  }

  private expire(now: number): void {
    for (const [traceId, { since, spans }] of this.waiting)
      if (now - since > this.options.bufferMs) {
        this.waiting.delete(traceId);
        this.held -= spans.length;
      }
    // A kept trace's late spans (a workflow's, after a pause) still come within the retention.
    const keepMs = this.options.retentionDays * 24 * 60 * 60 * 1000;
    for (const [traceId, seen] of this.kept) {
      if (now - seen <= keepMs) break;
      this.kept.delete(traceId);
    }
  }

  /** Notes the trace as kept, newest last; the least recently seen go past MAX_KEPT_TRACES. */
  private keep(traceId: string, now: number): void {
    this.kept.delete(traceId);
    this.kept.set(traceId, now);
    if (this.kept.size > MAX_KEPT_TRACES) this.kept.delete(this.kept.keys().next().value!);
  }

  private dropOldestWaiting(): void {
    const [oldest] = this.waiting;
    if (!oldest) return;
    this.waiting.delete(oldest[0]);
    this.held -= oldest[1].spans.length;
  }

  private async prune(): Promise<void> {
    try {
      const removed = await pruneSpans(this.db, this.options.retentionDays);
      if (removed) this.log.info({ removed }, 'pruned trace spans past their retention');
    } catch (error) {
      this.log.warn({ error: (error as Error).message }, 'could not prune trace spans');
    }
  }
}

/** Files this server's finished spans in its database until the returned function stops it. */
export function storeSpans(
  tracing: Tracing,
  db: Queryable,
  config: ObservabilitySettings,
  log: Logger,
): () => Promise<void> {
  const store = new SpanStore(
    db,
    {
      retentionDays: config.TRACE_RETENTION_DAYS,
      bufferMs: config.TRACE_STORE_BUFFER_MS,
      flushMs: config.TRACE_STORE_FLUSH_MS,
      batchSize: config.TRACE_STORE_BATCH_SIZE,
      maxHeld: config.TRACE_STORE_MAX_SPANS,
    },
    log.child({ component: 'span-store' }),
  );
  const detach = tracing.attach(store);
  return async () => {
    detach();
    await store.shutdown();
  };
}
