/**
 * The agent, run and step a piece of work belongs to, carried in the OpenTelemetry context: spans get
 * them as attributes (the span store files spans by them) and every log line gets them with the trace
 * id (src/logger.ts), whether written in a request, an activity or the SDK's workflow logger.
 */
import { context, createContextKey, trace, type Attributes } from '@opentelemetry/api';

export interface LettaIds {
  agentId?: string;
  runId?: string;
  stepId?: string;
}

/** The span attributes that name them. */
export const ID_ATTRIBUTES = {
  agentId: 'letta.agent.id',
  runId: 'letta.run.id',
  stepId: 'letta.step.id',
} as const satisfies Record<keyof LettaIds, string>;

const IDS = createContextKey('letta ids');
/** A request's ids learnt as it goes (the run it starts), which its later log lines name. */
const NOTED = createContextKey('letta noted ids');

const KEYS = Object.keys(ID_ATTRIBUTES) as (keyof LettaIds)[];

/** The ids an activity's or workflow's input names (`agentId`, `runId`, `stepId` fields). */
export function idsOf(value: unknown): LettaIds {
  if (!value || typeof value !== 'object') return {};
  const ids: LettaIds = {};
  for (const key of KEYS) {
    const id = (value as Record<string, unknown>)[key];
    if (typeof id === 'string') ids[key] = id;
  }
  return ids;
}

export const currentIds = (): LettaIds => (context.active().getValue(IDS) as LettaIds | undefined) ?? {};

export function idAttributes(ids: LettaIds): Attributes {
  const attributes: Attributes = {};
  for (const key of KEYS) if (ids[key]) attributes[ID_ATTRIBUTES[key]] = ids[key];
  return attributes;
}

/** Runs `work` with these ids added to the context's, and names them on the span active now. */
export function withIds<T>(ids: LettaIds, work: () => T): T {
  trace.getActiveSpan()?.setAttributes(idAttributes(ids));
  return context.with(context.active().setValue(IDS, { ...currentIds(), ...ids }), work);
}

/**
 * Runs `work` (a request) with ids read when asked: from `known` (its path, once routed) and from what
 * `noteIds` learns meanwhile.
 */
export function withLearntIds<T>(known: () => LettaIds, work: () => T): T {
  const noted: LettaIds = {};
  const live = {};
  for (const key of KEYS)
    Object.defineProperty(live, key, { enumerable: true, get: () => noted[key] ?? known()[key] });
  return context.with(context.active().setValue(IDS, live).setValue(NOTED, noted), work);
}

/** Names ids learnt in a request (the run it started) on its span and in its later log lines. */
export function noteIds(ids: LettaIds): void {
  trace.getActiveSpan()?.setAttributes(idAttributes(ids));
  const noted = context.active().getValue(NOTED) as LettaIds | undefined;
  if (noted) Object.assign(noted, ids);
}

/** The ids as log lines name them, in Letta's snake_case. */
export function logIds({ agentId, runId, stepId }: LettaIds): Record<string, string> {
  const fields: Record<string, string> = {};
  if (agentId) fields.agent_id = agentId;
  if (runId) fields.run_id = runId;
  if (stepId) fields.step_id = stepId;
  return fields;
}

/** What a log line carries of its context: the ids and the trace. */
export function logFields(): Record<string, string> {
  const fields = logIds(currentIds());
  const span = trace.getActiveSpan()?.spanContext();
  if (span && trace.isSpanContextValid(span)) {
    fields.trace_id = span.traceId;
    fields.span_id = span.spanId;
  }
  return fields;
}
