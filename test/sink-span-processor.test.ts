/**
 * The workflow sandbox's span processor (src/observability/sink-span-processor.ts): a sampled span's
 * end reaches the exporter at once and makes no promise (in the sandbox each promise costs a
 * source-mapped stack trace); OpenTelemetry's SimpleSpanProcessor, which it stands in for, makes some.
 */
import v8 from 'node:v8';
import { ROOT_CONTEXT, trace, TraceFlags, type Context } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { ExportResultCode } from '@opentelemetry/core';
import { SinkSpanProcessor } from '../src/observability/sink-span-processor';

/** An exporter that keeps what it is given and answers at once, as the SDK's sink exporter does. */
const keeping = () => {
  const exported: ReadableSpan[] = [];
  const exporter: SpanExporter = {
    export: (spans, done) => {
      exported.push(...spans);
      done({ code: ExportResultCode.SUCCESS });
    },
    shutdown: () => Promise.resolve(),
  };
  return { exported, exporter };
};

/** A caller's context, sampled or not: the default sampler follows it. */
const callerContext = (sampled: boolean): Context =>
  trace.setSpanContext(ROOT_CONTEXT, {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
  });

/** Ends a span under `parent` with `processor`: how many promises its end made. */
function promisesOfEnd(processor: SpanProcessor, parent: Context): number {
  const provider = new BasicTracerProvider();
  provider.addSpanProcessor(processor);
  const span = provider.getTracer('test').startSpan('StartActivity:callModel', {}, parent);
  let made = 0;
  const stop = v8.promiseHooks.onInit(() => void made++);
  try {
    span.end();
  } finally {
    stop();
  }
  return made;
}

describe('the workflow sandbox span processor', () => {
  it('hands a sampled span to the exporter as it ends, making no promise', () => {
    const { exported, exporter } = keeping();
    expect(promisesOfEnd(new SinkSpanProcessor(exporter), callerContext(true))).toBe(0);
    expect(exported.map((span) => span.name)).toEqual(['StartActivity:callModel']);
    expect(exported[0].spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
  });

  it('exports nothing of a caller that is not sampled', () => {
    const { exported, exporter } = keeping();
    promisesOfEnd(new SinkSpanProcessor(exporter), callerContext(false));
    expect(exported).toEqual([]);
  });

  it('stands in for a processor that makes promises on the same end', () => {
    const { exported, exporter } = keeping();
    expect(promisesOfEnd(new SimpleSpanProcessor(exporter), callerContext(true))).toBeGreaterThan(0);
    expect(exported).toHaveLength(1);
  });
});
