/**
 * Temporal's OpenTelemetry workflow interceptors (bundled with the workflows), with their spans handed
 * to the `exporter` sink by a SinkSpanProcessor rather than the SDK tracer's SimpleSpanProcessor, whose
 * promises the sandbox's promise hook makes costly (bench/sdk-costs.md). The interceptors are the SDK's
 * classes: their awaits, and so the commands a workflow issues, are unchanged; only the tracer they
 * start spans with is this one.
 */
// First: it gives the sandbox what OpenTelemetry's modules read as they load (`performance`).
import '@temporalio/interceptors-opentelemetry/lib/workflow/runtime';
import { BasicTracerProvider, type Tracer } from '@opentelemetry/sdk-trace-base';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import { SpanExporter } from '@temporalio/interceptors-opentelemetry/lib/workflow/span-exporter';
import type { WorkflowInterceptors } from '@temporalio/workflow';
import { SinkSpanProcessor } from './sink-span-processor';

/**
 * The workflow context's tracer, under the SDK's instrumentation name. Its provider is not registered:
 * the SDK's interceptors register theirs, with the context manager both providers' spans live in.
 */
let tracer: Tracer | undefined;
const sinkTracer = () => {
  if (!tracer) {
    const provider = new BasicTracerProvider();
    provider.addSpanProcessor(new SinkSpanProcessor(new SpanExporter()));
    tracer = provider.getTracer('@temporalio/interceptor-workflow');
  }
  return tracer;
};

class InboundInterceptor extends OpenTelemetryInboundInterceptor {
  protected override readonly tracer = sinkTracer();
}

class OutboundInterceptor extends OpenTelemetryOutboundInterceptor {
  protected override readonly tracer = sinkTracer();
}

export const interceptors = (): WorkflowInterceptors => ({
  inbound: [new InboundInterceptor()],
  outbound: [new OutboundInterceptor()],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
