/** Logs, metrics and traces: how the server tells what it does. */
import { z } from 'zod';
import { flag, milliseconds, optional, wholeNumber } from '../settings-fields';

export const logAndMetricSettings = z.object({
  LOG_LEVEL: z
    .enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'])
    .default('info')
    .describe('`trace`, `debug`, `info`, `warn`, `error`, `fatal` or `silent` (JSON logs on stdout)'),
  LOG_FORMAT: z
    .enum(['auto', 'json', 'pretty'])
    .default('auto')
    .describe(
      '`auto`: coloured, readable lines (pino-pretty) and a start-up banner on a terminal, JSON lines otherwise; `json` or `pretty` to choose',
    ),
  METRICS_PORT: optional(
    z.coerce
      .number({ error: 'expected a port number' })
      .int('expected a whole number')
      .min(0, 'expected a port from 0 to 65535')
      .max(65535, 'expected a port from 0 to 65535'),
  ).describe(
    "port of `/metrics` (Prometheus: the server's metrics and the Temporal SDK's), on its own listener without a password; unset: no metrics are served; `0`: a free port, logged (see [Metrics](operations.md#metrics-and-dashboards))",
  ),
  METRICS_HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .describe('bind address of `/metrics` (beyond loopback only where the network is private to Prometheus)'),
});

export const traceSettings = z
  .object({
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: flag
      .default(false)
      .describe(
        "`true` puts model calls' messages and replies in their spans (the GenAI conventions' switch); off, spans hold no message text, argument or secret. Traces go over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (the exporter reads the other `OTEL_EXPORTER_OTLP_*` variables itself)",
      ),
    TRACE_RETENTION_DAYS: z.coerce
      .number()
      .positive()
      .default(7)
      .describe(
        "how long the spans of runs' traces are kept in the database for the trace and step metrics routes",
      ),
    TRACE_STORE_BUFFER_MS: milliseconds
      .default(60_000)
      .describe(
        'how long the spans of a trace wait in memory for a span that names a run; a trace that names none (a health check, a read) is never stored',
      ),
    TRACE_STORE_FLUSH_MS: milliseconds
      .default(1_000)
      .describe('how often finished spans are written to the database'),
    TRACE_STORE_BATCH_SIZE: wholeNumber
      .positive()
      .default(500)
      .describe('the most spans one write to the database takes'),
    TRACE_STORE_MAX_SPANS: wholeNumber
      .positive()
      .default(20_000)
      .describe(
        'the most spans held in memory before they are written; past it the oldest unstored traces are dropped',
      ),
  })
  .meta({
    title: 'Traces',
    description:
      'OpenTelemetry traces (docs/operations.md, "Traces"): exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, with the exporter\'s other `OTEL_EXPORTER_OTLP_*` variables and `OTEL_SERVICE_NAME`/`OTEL_RESOURCE_ATTRIBUTES`; the spans of runs\' traces are kept in the database either way.',
  });

export const observabilitySettings = logAndMetricSettings.extend(traceSettings.shape).meta({
  title: 'Logs, metrics and traces',
  description: 'What the server logs and how, where Prometheus reads its metrics, and the traces of runs.',
});

export type ObservabilitySettings = z.infer<typeof observabilitySettings>;
