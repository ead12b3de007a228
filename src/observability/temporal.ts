/**
 * Temporal's part of a trace, through @temporalio/interceptors-opentelemetry: the client's calls (the
 * update-with-start, signals) carry the request's trace in their headers; the workflows' spans are made
 * in the workflow sandbox and leave it through the `exporter` sink (never during replay); each activity
 * runs in a span of its own. Ours, beside them, name the agent, run and step of each piece of work.
 */
import type { WorkflowClientInterceptor } from '@temporalio/client';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  ActivityOutboundCallsInterceptor,
  GetLogAttributesInput,
  InjectedSinks,
  Next,
} from '@temporalio/worker';
import { trace, type AttributeValue } from '@opentelemetry/api';
import { Resource } from '@opentelemetry/resources';
import { NoopSpanProcessor, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { idsOf, withIds, type LettaIds } from './ids';
import type { Tracing } from './tracing';

/** The workflow bundle's interceptor modules: ours first, so Temporal's sees the context ours sets. */
export const WORKFLOW_INTERCEPTOR_MODULES = [
  require.resolve('./workflow-context'),
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
];

/** The span attribute naming the tool a tool call's activity runs. */
export const TOOL_NAME_ATTRIBUTE = 'letta.tool.name';

export const clientInterceptors = (): WorkflowClientInterceptor[] => [
  new OpenTelemetryWorkflowClientInterceptor(),
];

/** An activity's ids (from its input), on its span and in its context; its log lines name them too. */
class ActivityIds implements ActivityInboundCallsInterceptor, ActivityOutboundCallsInterceptor {
  private ids: LettaIds = {};

  execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
    const [first] = input.args;
    this.ids = idsOf(first);
    const toolName = (first as { toolName?: unknown } | undefined)?.toolName;
    return withIds(this.ids, () => {
      if (typeof toolName === 'string' && this.ids.stepId) withToolName(toolName);
      return next(input);
    });
  }

  getLogAttributes(
    input: GetLogAttributesInput,
    next: Next<ActivityOutboundCallsInterceptor, 'getLogAttributes'>,
  ) {
    const { agentId: agent_id, runId: run_id, stepId: step_id } = this.ids;
    const named = Object.entries({ agent_id, run_id, step_id }).filter(([, id]) => id);
    return next({ ...Object.fromEntries(named), ...input });
  }
}

/** Marks the activity's span, the active one (Temporal's interceptor runs outside ours), as a tool call. */
const withToolName = (toolName: string) => trace.getActiveSpan()?.setAttribute(TOOL_NAME_ATTRIBUTE, toolName);

const activityInterceptors: ActivityInterceptorsFactory[] = [
  (ctx) => ({
    inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
    outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
  }),
  () => {
    const ids = new ActivityIds();
    return { inbound: ids, outbound: ids };
  },
];

const primitive = (value: unknown): value is AttributeValue =>
  ['string', 'number', 'boolean'].includes(typeof value) ||
  (Array.isArray(value) && value.every((item) => ['string', 'number', 'boolean'].includes(typeof item)));

/**
 * The sink adds the whole WorkflowInfo to a workflow span's attributes: its memo, search attributes and
 * last result are objects (a schedule's last result is a workflow's data). Only plain values are kept.
 */
function plainAttributes(processor: SpanProcessor): SpanProcessor {
  return {
    onStart: () => {},
    onEnd: (span: ReadableSpan) => {
      const attributes = span.attributes as Record<string, unknown>;
      for (const [key, value] of Object.entries(attributes)) if (!primitive(value)) delete attributes[key];
      processor.onEnd(span);
    },
    forceFlush: () => processor.forceFlush(),
    shutdown: async () => {},
  };
}

/** Where the workflows' spans go: the process's processors, or nowhere with tracing off. */
const workflowSinks = (tracing: Tracing | undefined): InjectedSinks<never> =>
  ({
    exporter: tracing
      ? makeWorkflowExporter(plainAttributes(tracing.processor), tracing.resource)
      : makeWorkflowExporter(new NoopSpanProcessor(), Resource.empty()),
  }) as never;

/**
 * What the workflows' worker adds: the workflow interceptors with tracing on or off alike, as their
 * awaits are part of the order in which a workflow issues its commands (a history recorded with them
 * replays only with them, so turning tracing off must not take them away from running workflows); the
 * activities' interceptors only with tracing on.
 */
export const workflowWorkerInterceptors = (tracing: Tracing | undefined) => ({
  interceptors: {
    workflowModules: WORKFLOW_INTERCEPTOR_MODULES,
    ...(tracing && { activity: activityInterceptors }),
  },
  sinks: workflowSinks(tracing),
});

/** What an activities-only worker adds for tracing. */
export const tracedActivityWorker = () => ({ interceptors: { activity: activityInterceptors } });

/**
 * What a replay worker adds: the same workflow interceptors as the worker whose histories it replays,
 * and their sink, which a replay never calls but the SDK logs an error for when it is not registered.
 */
export const replayOptions = {
  interceptors: { workflowModules: WORKFLOW_INTERCEPTOR_MODULES },
  sinks: workflowSinks(undefined),
};
