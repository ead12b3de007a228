import type { Request, Response } from 'express';
/** Letta's steps (routers/v1/steps.py) and a run's steps: each model call of a run, with its usage. */
import { z } from 'zod';
import type { ApiContext } from '../context';
import { notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { lettaMessages, stepShape } from '../letta-shapes';
import { LettaMessageSchema, StepSchema } from '../schemas/responses';
import { isoMoment, pageQuery, stringList } from '../schemas/common';
import { getStep, listSteps, setStepFeedback, stepMessages } from '../../db/steps';
import { getRun } from '../../db/runs';
import { runSpans, stepSpans } from '../../db/trace-spans';
import { otelTraceRow, providerTrace, stepMetrics } from '../trace-shapes';

const Feedback = z.enum(['positive', 'negative']);

const ListStepsQuery = pageQuery(50, 'desc').extend({
  agent_id: z.string().optional(),
  model: z.string().optional(),
  feedback: Feedback.optional(),
  start_date: isoMoment.optional(),
  end_date: isoMoment.optional(),
  tags: stringList,
});

const ListRunStepsQuery = pageQuery(100, 'asc');

const TraceQuery = z.object({
  limit: z.coerce.number().int().min(1).max(5000).default(1000).describe('Maximum number of spans to return'),
});

const nanoseconds = z.number().int().nullable();

/** Letta's StepMetrics (schemas/step_metrics.py). */
const StepMetricsSchema = z.object({
  id: z.string(),
  organization_id: z.string().nullable(),
  provider_id: z.string().nullable(),
  run_id: z.string().nullable(),
  agent_id: z.string().nullable(),
  step_start_ns: nanoseconds,
  llm_request_start_ns: nanoseconds,
  llm_request_ns: nanoseconds,
  tool_execution_ns: nanoseconds,
  step_ns: nanoseconds,
  base_template_id: z.string().nullable(),
  template_id: z.string().nullable(),
  project_id: z.string().nullable(),
});

/** Letta's ProviderTrace (schemas/provider_trace.py), as far as a span tells it. */
const ProviderTraceSchema = z.object({
  id: z.string(),
  request_json: z.record(z.string(), z.unknown()),
  response_json: z.record(z.string(), z.unknown()),
  agent_id: z.string().nullable(),
  run_id: z.string().nullable(),
  step_id: z.string().nullable(),
  call_type: z.string(),
  source: z.string(),
  latency_ms: z.number(),
  created_at: z.string(),
});

const FeedbackSchema = z.object({ feedback: Feedback.nullish(), tags: z.array(z.string()).nullish() });

export function stepsRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Steps');
  const on = routeTable(router, stepsContext(ctx));
  on.get('/v1/steps', listStepsRouteDoc, listStepsRoute);
  on.get('/v1/steps/:stepId', retrieveStepDoc, retrieveStep);
  on.get('/v1/steps/:stepId/messages', listMessagesOfStepDoc, listMessagesOfStep);
  on.patch('/v1/steps/:stepId/feedback', modifyFeedbackOfStepDoc, modifyFeedbackOfStep);
  on.get('/v1/runs/:runId/steps', listStepsOfRunDoc, listStepsOfRun);
  on.get('/v1/runs/:runId/trace', retrieveTraceOfRunDoc, retrieveTraceOfRun);
  on.get('/v1/steps/:stepId/trace', retrieveProviderTraceOfStepDoc, retrieveProviderTraceOfStep);
  on.get('/v1/steps/:stepId/metrics', retrieveMetricsOfStepDoc, retrieveMetricsOfStep);

  return router;
}

/** What the routes of stepsRouter share. */
function stepsContext(ctx: ApiContext) {
  const loadStep = async (id: string) => {
    const step = await getStep(ctx.db, id);
    if (!step) throw notFound(`Step ${id}`);
    return step;
  };
  return { ctx, loadStep };
}

type StepsContext = ReturnType<typeof stepsContext>;

const listStepsRouteDoc: RouteDoc = {
  summary: 'List steps',
  query: ListStepsQuery,
  response: z.array(StepSchema),
};

async function listStepsRoute({ ctx }: StepsContext, req: Request, res: Response) {
  const { agent_id, model, feedback, start_date, end_date, tags, ...page } = parseQuery(ListStepsQuery, req);
  const filters = { agentId: agent_id, model, feedback, start: start_date, end: end_date, tags };
  res.json((await listSteps(ctx.db, filters, page)).map(stepShape));
}

const retrieveStepDoc: RouteDoc = { summary: 'Retrieve a step', response: StepSchema };

async function retrieveStep({ loadStep }: StepsContext, req: Request<{ stepId: string }>, res: Response) {
  res.json(stepShape(await loadStep(req.params.stepId)));
}

const listMessagesOfStepDoc: RouteDoc = {
  summary: 'List the messages of a step',
  response: z.array(LettaMessageSchema),
};

async function listMessagesOfStep(
  { ctx, loadStep }: StepsContext,
  req: Request<{ stepId: string }>,
  res: Response,
) {
  const stepId = req.params.stepId;
  await loadStep(stepId);
  res.json((await stepMessages(ctx.db, stepId)).flatMap(lettaMessages));
}

const modifyFeedbackOfStepDoc: RouteDoc = {
  summary: 'Modify the feedback of a step',
  body: FeedbackSchema,
  response: StepSchema,
};

async function modifyFeedbackOfStep(
  { ctx, loadStep }: StepsContext,
  req: Request<{ stepId: string }>,
  res: Response,
) {
  const stepId = req.params.stepId;
  await loadStep(stepId);
  await setStepFeedback(ctx.db, stepId, parseBody(FeedbackSchema, req));
  res.json(stepShape(await loadStep(stepId)));
}

const listStepsOfRunDoc: RouteDoc = {
  summary: 'List the steps of a run',
  query: ListRunStepsQuery,
  response: z.array(StepSchema),
};

async function listStepsOfRun({ ctx }: StepsContext, req: Request<{ runId: string }>, res: Response) {
  const runId = req.params.runId;
  const run = await getRun(ctx.db, runId);
  if (!run) throw notFound(`Run ${runId}`);
  const page = parseQuery(ListRunStepsQuery, req);
  res.json((await listSteps(ctx.db, { runId: run.id }, page)).map(stepShape));
}

// Spans of the run's traces, as Letta answers them from ClickHouse (src/observability/span-store.ts).
const retrieveTraceOfRunDoc: RouteDoc = {
  summary: 'Retrieve the trace of a run',
  description:
    "The OpenTelemetry spans of the traces the run's work is in (its request, workflows, activities, model and tool calls), oldest first, as rows of the OpenTelemetry Collector's ClickHouse table; kept for TRACE_RETENTION_DAYS.",
  query: TraceQuery,
  response: z.array(z.record(z.string(), z.unknown())),
};

async function retrieveTraceOfRun({ ctx }: StepsContext, req: Request<{ runId: string }>, res: Response) {
  const runId = req.params.runId;
  if (!(await getRun(ctx.db, runId))) throw notFound(`Run ${runId}`);
  const { limit } = parseQuery(TraceQuery, req);
  res.json((await runSpans(ctx.db, runId, limit)).map(otelTraceRow));
}

const retrieveProviderTraceOfStepDoc: RouteDoc = {
  summary: 'Retrieve the provider trace of a step',
  description:
    "The step's model call as its span holds it: model, parameters, usage and finish reason (messages only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT); null when none is kept.",
  response: ProviderTraceSchema.nullable(),
};

async function retrieveProviderTraceOfStep(
  { ctx, loadStep }: StepsContext,
  req: Request<{ stepId: string }>,
  res: Response,
) {
  const step = await loadStep(req.params.stepId);
  res.json(providerTrace(step, await stepSpans(ctx.db, req.params.stepId)));
}

const retrieveMetricsOfStepDoc: RouteDoc = {
  summary: 'Retrieve the metrics of a step',
  response: StepMetricsSchema,
};

async function retrieveMetricsOfStep(
  { ctx, loadStep }: StepsContext,
  req: Request<{ stepId: string }>,
  res: Response,
) {
  const step = await loadStep(req.params.stepId);
  res.json(stepMetrics(step, await stepSpans(ctx.db, req.params.stepId)));
}
