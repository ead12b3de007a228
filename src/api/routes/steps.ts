/** Letta's steps (routers/v1/steps.py) and a run's steps: each model call of a run, with its usage. */
import { z } from 'zod';
import type { ApiContext } from '../context';
import { notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import { documentedRouter, type DocumentedRouter } from '../route-book';
import { lettaMessages, stepShape } from '../letta-shapes';
import { LettaMessageSchema, StepSchema } from '../schemas/responses';
import { pageQuery, stringList } from '../schemas/common';
import { getStep, listSteps, setStepFeedback, stepMessages } from '../../db/steps';
import { getRun } from '../../db/runs';

const Feedback = z.enum(['positive', 'negative']);

const ListStepsQuery = pageQuery(50, 'desc').extend({
  agent_id: z.string().optional(),
  model: z.string().optional(),
  feedback: Feedback.optional(),
  start_date: z.coerce.date().optional(),
  end_date: z.coerce.date().optional(),
  tags: stringList,
});

const ListRunStepsQuery = pageQuery(100, 'asc');

const FeedbackSchema = z.object({ feedback: Feedback.nullish(), tags: z.array(z.string()).nullish() });

export function stepsRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Steps');

  const loadStep = async (id: string) => {
    const step = await getStep(ctx.db, id);
    if (!step) throw notFound(`Step ${id}`);
    return step;
  };

  router.get(
    '/v1/steps',
    { summary: 'List steps', query: ListStepsQuery, response: z.array(StepSchema) },
    async (req, res) => {
      const { agent_id, model, feedback, start_date, end_date, tags, ...page } = parseQuery(
        ListStepsQuery,
        req,
      );
      const filters = { agentId: agent_id, model, feedback, start: start_date, end: end_date, tags };
      res.json((await listSteps(ctx.db, filters, page)).map(stepShape));
    },
  );

  router.get('/v1/steps/:stepId', { summary: 'Retrieve a step', response: StepSchema }, async (req, res) => {
    res.json(stepShape(await loadStep(req.params.stepId)));
  });

  router.get(
    '/v1/steps/:stepId/messages',
    { summary: 'List the messages of a step', response: z.array(LettaMessageSchema) },
    async (req, res) => {
      const stepId = req.params.stepId;
      await loadStep(stepId);
      res.json((await stepMessages(ctx.db, stepId)).flatMap(lettaMessages));
    },
  );

  router.patch(
    '/v1/steps/:stepId/feedback',
    { summary: 'Modify the feedback of a step', body: FeedbackSchema, response: StepSchema },
    async (req, res) => {
      const stepId = req.params.stepId;
      await loadStep(stepId);
      await setStepFeedback(ctx.db, stepId, parseBody(FeedbackSchema, req));
      res.json(stepShape(await loadStep(stepId)));
    },
  );

  router.get(
    '/v1/runs/:runId/steps',
    { summary: 'List the steps of a run', query: ListRunStepsQuery, response: z.array(StepSchema) },
    async (req, res) => {
      const runId = req.params.runId;
      const run = await getRun(ctx.db, runId);
      if (!run) throw notFound(`Run ${runId}`);
      const page = parseQuery(ListRunStepsQuery, req);
      res.json((await listSteps(ctx.db, { runId: run.id }, page)).map(stepShape));
    },
  );

  // No OpenTelemetry traces are kept here (Letta keeps them only with ClickHouse): none to show.
  router.get(
    '/v1/runs/:runId/trace',
    {
      summary: 'Retrieve the trace of a run',
      description: 'Always empty: no OpenTelemetry traces are kept (Letta keeps them only with ClickHouse).',
      response: z.array(z.record(z.string(), z.unknown())),
    },
    async (req, res) => {
      const runId = req.params.runId;
      if (!(await getRun(ctx.db, runId))) throw notFound(`Run ${runId}`);
      res.json([]);
    },
  );

  return router;
}
