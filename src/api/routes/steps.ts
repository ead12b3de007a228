/** Letta's steps (routers/v1/steps.py) and a run's steps: each model call of a run, with its usage. */
import { Router } from 'express';
import { z } from 'zod';
import type { ApiContext } from '../context';
import { notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import { lettaMessages, stepShape } from '../letta-shapes';
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

const FeedbackSchema = z.object({ feedback: Feedback.nullish(), tags: z.array(z.string()).nullish() });

export function stepsRouter(ctx: ApiContext): Router {
  const router = Router();

  const loadStep = async (id: string) => {
    const step = await getStep(ctx.db, id);
    if (!step) throw notFound(`Step ${id}`);
    return step;
  };

  router.get('/v1/steps', async (req, res) => {
    const { agent_id, model, feedback, start_date, end_date, tags, ...page } = parseQuery(
      ListStepsQuery,
      req,
    );
    const filters = { agentId: agent_id, model, feedback, start: start_date, end: end_date, tags };
    res.json((await listSteps(ctx.db, filters, page)).map(stepShape));
  });

  router.get('/v1/steps/:stepId', async (req, res) => {
    res.json(stepShape(await loadStep(req.params.stepId)));
  });

  router.get('/v1/steps/:stepId/messages', async (req, res) => {
    await loadStep(req.params.stepId);
    res.json((await stepMessages(ctx.db, req.params.stepId)).flatMap(lettaMessages));
  });

  router.patch('/v1/steps/:stepId/feedback', async (req, res) => {
    await loadStep(req.params.stepId);
    await setStepFeedback(ctx.db, req.params.stepId, parseBody(FeedbackSchema, req));
    res.json(stepShape(await loadStep(req.params.stepId)));
  });

  router.get('/v1/runs/:runId/steps', async (req, res) => {
    const run = await getRun(ctx.db, req.params.runId);
    if (!run) throw notFound(`Run ${req.params.runId}`);
    const page = parseQuery(pageQuery(100, 'asc'), req);
    res.json((await listSteps(ctx.db, { runId: run.id }, page)).map(stepShape));
  });

  // No OpenTelemetry traces are kept here (Letta keeps them only with ClickHouse): none to show.
  router.get('/v1/runs/:runId/trace', async (req, res) => {
    if (!(await getRun(ctx.db, req.params.runId))) throw notFound(`Run ${req.params.runId}`);
    res.json([]);
  });

  return router;
}
