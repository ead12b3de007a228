/**
 * The process's OpenTelemetry tracing: one tracer provider, registered once (the API's globals are
 * per process), whose finished spans go to the OTLP exporter when the standard OTEL_EXPORTER_OTLP_*
 * variables name an endpoint, and to each running server's span store (src/observability/span-store.ts).
 * Workflow spans, made inside the workflow sandbox by Temporal's interceptors, reach the same processors
 * through the worker's sink.
 */
import {
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span as ApiSpan,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource, detectResourcesSync, envDetectorSync } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type Span,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { currentIds, idAttributes } from '../context-ids';

export const SERVICE_NAME = 'letta-temporal';

/** The name our own spans are made under. */
export const tracer = () => trace.getTracer(SERVICE_NAME);

/** OpenTelemetry's own switch: no spans at all, so no trace is exported or stored. */
const tracingDisabled = (env: NodeJS.ProcessEnv = process.env) => env.OTEL_SDK_DISABLED === 'true';

/** Whether the OTLP exporter has somewhere to send spans, by the variables it reads itself. */
export function otlpConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (tracingDisabled(env) || env.OTEL_TRACES_EXPORTER === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

/** Hands every finished span to each processor attached now; a store comes and goes with its server. */
class FanOut implements SpanProcessor {
  readonly processors = new Set<SpanProcessor>();
  onStart(span: Span, parent: Context): void {
    for (const processor of this.processors) processor.onStart(span, parent);
  }
  onEnd(span: ReadableSpan): void {
    for (const processor of this.processors) processor.onEnd(span);
  }
  async forceFlush(): Promise<void> {
    await Promise.all([...this.processors].map((processor) => processor.forceFlush()));
  }
  async shutdown(): Promise<void> {
    await Promise.all([...this.processors].map((processor) => processor.shutdown()));
  }
}

export interface TracingOptions {
  /** Whether spans may hold message text and arguments (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT). */
  captureContent: boolean;
}

export interface Tracing {
  resource: Resource;
  /** Every finished span, the workflows' included, goes here. */
  processor: SpanProcessor;
  /** Adds a processor (a server's span store) until the returned function is called. */
  attach(processor: SpanProcessor): () => void;
  options: TracingOptions;
}

let installed: Tracing | undefined;

/**
 * Registers the tracer provider, its context manager and W3C propagation once per process; none with
 * OTEL_SDK_DISABLED=true (the API's tracer then makes no-op spans).
 */
export function installTracing(options: TracingOptions): Tracing | undefined {
  if (tracingDisabled()) return undefined;
  if (installed) {
    installed.options = options;
    return installed;
  }
  const resource = Resource.default()
    .merge(new Resource({ [ATTR_SERVICE_NAME]: SERVICE_NAME }))
    .merge(detectResourcesSync({ detectors: [envDetectorSync] }));
  const fanOut = new FanOut();
  // The exporter reads its endpoint, headers, timeout and compression from the OTEL_* variables.
  if (otlpConfigured()) fanOut.processors.add(new BatchSpanProcessor(new OTLPTraceExporter()));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [fanOut] });
  provider.register();
  installed = {
    resource,
    options,
    processor: fanOut,
    attach: (processor) => {
      fanOut.processors.add(processor);
      return () => void fanOut.processors.delete(processor);
    },
  };
  return installed;
}

/** Sends what the OTLP exporter holds (before the process exits). */
export async function flushTracing(): Promise<void> {
  await installed?.processor.forceFlush();
}

/** Whether spans may hold message text and arguments: off unless an operator turns it on. */
export const capturesContent = () => installed?.options.captureContent ?? false;

/**
 * Runs `work` in a span of ours, named by the ids of the context: a failure marks it failed with the
 * error's type only, as its message may quote what a span must not hold.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: ApiSpan) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  const spanAttributes = { ...idAttributes(currentIds()), ...attributes };
  return tracer().startActiveSpan(name, { kind, attributes: spanAttributes }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute('error.type', (error as Error)?.name ?? 'Error');
      throw error;
    } finally {
      span.end();
    }
  });
}
