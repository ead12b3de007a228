/**
 * Stored spans (src/db/trace-spans.ts) in Letta's shapes: a run's trace as the rows of the OpenTelemetry
 * Collector's ClickHouse `otel_traces` table Letta reads them from, a step's provider trace from its
 * model call's GenAI span, and a step's metrics (Letta's StepMetrics) from its spans' timings.
 */
import type { SpanRow } from '../db/trace-spans';
import type { MessageRow } from '../db/rows';
import { GEN_AI } from '../observability/genai';
import { TOOL_NAME_ATTRIBUTE } from '../observability/temporal';

/** ClickHouse keeps attribute values as strings. */
const stringMap = (attributes: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(attributes).map(([key, value]) => [
      key,
      typeof value === 'string' ? value : JSON.stringify(value),
    ]),
  );

const isoOf = (nanoseconds: string | bigint) =>
  new Date(Number(BigInt(nanoseconds) / 1_000_000n)).toISOString();

export function otelTraceRow(span: SpanRow): Record<string, unknown> {
  return {
    Timestamp: isoOf(span.start_ns),
    TraceId: span.trace_id,
    SpanId: span.span_id,
    ParentSpanId: span.parent_span_id ?? '',
    TraceState: '',
    SpanName: span.name,
    SpanKind: span.kind,
    ServiceName: span.service_name,
    ResourceAttributes: stringMap(span.resource),
    ScopeName: span.scope_name,
    ScopeVersion: span.scope_version ?? '',
    SpanAttributes: stringMap(span.attributes),
    Duration: Number(span.duration_ns),
    StatusCode: span.status_code,
    StatusMessage: span.status_message,
    'Events.Timestamp': span.events.map((event) => isoOf(event.time_ns)),
    'Events.Name': span.events.map((event) => event.name),
    'Events.Attributes': span.events.map((event) => stringMap(event.attributes)),
    'Links.TraceId': span.links.map((link) => link.trace_id),
    'Links.SpanId': span.links.map((link) => link.span_id),
    'Links.TraceState': span.links.map((link) => link.trace_state),
    'Links.Attributes': span.links.map((link) => stringMap(link.attributes)),
  };
}

const isModelCall = (span: SpanRow) => span.attributes[GEN_AI.operation] === 'chat';
const isToolCall = (span: SpanRow) => typeof span.attributes[TOOL_NAME_ATTRIBUTE] === 'string';

const startOf = (span: SpanRow) => BigInt(span.start_ns);
const endOf = (span: SpanRow) => BigInt(span.start_ns) + BigInt(span.duration_ns);
const total = (spans: SpanRow[]) => spans.reduce((sum, span) => sum + BigInt(span.duration_ns), 0n);
const earliest = (spans: SpanRow[]) =>
  spans.length ? spans.map(startOf).reduce((a, b) => (a < b ? a : b)) : undefined;
const latest = (spans: SpanRow[]) =>
  spans.length ? spans.map(endOf).reduce((a, b) => (a > b ? a : b)) : undefined;
const number = (value: bigint | undefined) => (value === undefined ? null : Number(value));

/** Letta's StepMetrics: the step from its model call's start to its last tool call's end. */
export function stepMetrics(step: MessageRow, spans: SpanRow[]) {
  const modelCalls = spans.filter(isModelCall);
  const toolCalls = spans.filter(isToolCall);
  const start = earliest(spans);
  const end = latest(spans);
  return {
    id: step.step_id!,
    organization_id: null,
    provider_id: null,
    run_id: step.run_id,
    agent_id: step.agent_id,
    step_start_ns: number(start),
    llm_request_start_ns: number(earliest(modelCalls)),
    llm_request_ns: modelCalls.length ? number(total(modelCalls)) : null,
    tool_execution_ns: toolCalls.length ? number(total(toolCalls)) : null,
    step_ns: start === undefined || end === undefined ? null : number(end - start),
    base_template_id: null,
    template_id: null,
    project_id: null,
  };
}

/** GenAI attributes, by the name Letta's request/response JSON gives them. */
const pick = (attributes: Record<string, unknown>, names: Record<string, string>) =>
  Object.fromEntries(
    Object.entries(names)
      .filter(([, attribute]) => attributes[attribute] !== undefined)
      .map(([name, attribute]) => {
        const value = attributes[attribute];
        return [name, attribute.endsWith('.messages') ? JSON.parse(String(value)) : value];
      }),
  );

/**
 * Letta's ProviderTrace of a step's model call: what the request and response were, as far as its
 * span holds them (the messages only when content capture is on); null without one.
 */
export function providerTrace(step: MessageRow, spans: SpanRow[]) {
  const call = spans.find(isModelCall);
  if (!call) return null;
  const { attributes } = call;
  return {
    id: `provider_trace-${call.span_id}`,
    request_json: pick(attributes, {
      provider: GEN_AI.provider,
      model: GEN_AI.requestModel,
      max_tokens: GEN_AI.maxTokens,
      temperature: GEN_AI.temperature,
      messages: GEN_AI.inputMessages,
    }),
    response_json: {
      ...pick(attributes, { finish_reasons: GEN_AI.finishReasons, output: GEN_AI.outputMessages }),
      usage: pick(attributes, {
        prompt_tokens: GEN_AI.inputTokens,
        completion_tokens: GEN_AI.outputTokens,
        cached_input_tokens: GEN_AI.cachedInputTokens,
        reasoning_tokens: GEN_AI.reasoningTokens,
      }),
    },
    agent_id: step.agent_id,
    run_id: step.run_id,
    step_id: step.step_id,
    call_type: 'agent_step',
    source: call.service_name,
    latency_ms: Math.round(Number(call.duration_ns) / 1e6),
    created_at: isoOf(call.start_ns),
  };
}
