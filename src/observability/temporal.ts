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
  type OpenTelemetryWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  ActivityOutboundCallsInterceptor,
  GetLogAttributesInput,
  InjectedSink,
  InjectedSinks,
  Next,
} from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import { trace } from '@opentelemetry/api';
import { Resource } from '@opentelemetry/resources';
import { NoopSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { idsOf, logIds, withIds } from '../context-ids';
import type { Tracing } from './tracing';

/** The workflow bundle's interceptor modules: ours first, so Temporal's sees the context ours sets. */
export const WORKFLOW_INTERCEPTOR_MODULES = [
  require.resolve('./workflow-context'),
  require.resolve('./workflow-tracing'),
];

/** The span attribute naming the tool a tool call's activity runs. */
export const TOOL_NAME_ATTRIBUTE = 'letta.tool.name';

export const clientInterceptors = (): WorkflowClientInterceptor[] => [
  new OpenTelemetryWorkflowClientInterceptor(),
];

/** An activity's ids (from its input), on its span and in its context; its log lines name them too. */
class ActivityIds implements ActivityInboundCallsInterceptor, ActivityOutboundCallsInterceptor {
  private logged: Record<string, string> = {};

  execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
    const [first] = input.args;
    const ids = idsOf(first);
    this.logged = logIds(ids);
    const toolName = (first as { toolName?: unknown } | undefined)?.toolName;
    return withIds(ids, () => {
      if (typeof toolName === 'string' && ids.stepId) withToolName(toolName);
      return next(input);
    });
  }

  getLogAttributes(
    input: GetLogAttributesInput,
    next: Next<ActivityOutboundCallsInterceptor, 'getLogAttributes'>,
  ) {
    return next({ ...this.logged, ...input });
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

/**
 * What a workflow span names of its workflow: the SDK's sink adds the WorkflowInfo it is given to every
 * span's attributes, whose memo, search attributes and last result are a workflow's data (objects, and
 * large), so it is given only these.
 */
const WORKFLOW_INFO_ON_SPANS = ['namespace', 'taskQueue', 'workflowType', 'workflowId', 'runId'] as const;

const spanInfo = (info: WorkflowInfo): Partial<WorkflowInfo> =>
  Object.fromEntries(WORKFLOW_INFO_ON_SPANS.map((key) => [key, info[key]]));

/** The SDK's exporter sink into `processor`, handed the workflow's identity rather than its whole info. */
function workflowExporter(
  processor: SpanProcessor,
  resource: Resource,
): InjectedSink<OpenTelemetryWorkflowExporter> {
  const sdkExporter = makeWorkflowExporter(processor, resource);
  return { export: { fn: (info, spans) => sdkExporter.export.fn(spanInfo(info) as WorkflowInfo, spans) } };
}

/** Where the workflows' spans go: the process's processors, or nowhere with tracing off. */
const workflowSinks = (tracing: Tracing | undefined): InjectedSinks<never> =>
  ({
    exporter: workflowExporter(
      tracing?.processor ?? new NoopSpanProcessor(),
      tracing?.resource ?? Resource.empty(),
    ),
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
