import { TraceFlags } from '@opentelemetry/api';
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * Hands each sampled span to `exporter` as it ends, synchronously and without a promise: in the
 * workflow sandbox every promise gets a source-mapped stack trace from the SDK's promise hook, and
 * OpenTelemetry's SimpleSpanProcessor makes three per export. The exporter (the SDK's sink exporter)
 * answers at once, so there is nothing to wait for.
 */
export class SinkSpanProcessor implements SpanProcessor {
  constructor(private readonly exporter: Pick<SpanExporter, 'export'>) {}

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (span.spanContext().traceFlags & TraceFlags.SAMPLED) this.exporter.export([span], () => {});
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
