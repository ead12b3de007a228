import type { Request, Response } from 'express';
import { z } from 'zod';
import type { ApiContext } from '../context';
import { notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import { LettaStreamingResponseSchema, RetrieveStreamSchema } from '../schemas/messages';
import { LettaMessageSchema, RunSchema, UsageStatisticsSchema } from '../schemas/responses';
import { RunWithPendingApprovalSchema } from '../schemas/runs';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { streamRun } from '../run-stream';
import { runLiveness } from '../../agent/turns';
import { pageQuery, queryBoolean, stringList } from '../schemas/common';
import { lettaMessages, runShape, usageShape } from '../letta-shapes';
import { listMessages } from '../../db/messages';
import { getRun, listRuns } from '../../db/runs';
import type { RunStatus } from '../../db/rows';
import { pendingApprovalView } from '../pending-approval';
import { pendingApproval } from '../../db/conversations';
import { approvalRecordsOfRun } from '../../db/approval-requests';
import { approvalRecordShape } from '../approval-shapes';

const ListRunsQuery = pageQuery(100, 'desc').extend({
  agent_id: z.string().optional(),
  conversation_id: z.string().optional(),
  statuses: stringList,
  background: queryBoolean,
  stop_reason: z.string().optional(),
  active: queryBoolean,
});

const RunMessagesQuery = pageQuery(100, 'asc');

export function runsRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Runs');
  const on = routeTable(router, runsContext(ctx));
  on.get('/v1/runs', listRunsRouteDoc, listRunsRoute);
  on.get('/v1/runs/:runId', retrieveRunDoc, retrieveRun);
  on.get('/v1/runs/:runId/usage', retrieveUsageForRunDoc, retrieveUsageForRun);
  on.get('/v1/runs/:runId/messages', listMessagesForRunDoc, listMessagesForRun);
  on.post('/v1/runs/:runId/stream', retrieveStreamForRunDoc, retrieveStreamForRun);

  return router;
}

/** What the routes of runsRouter share. */
function runsContext(ctx: ApiContext) {
  const loadRun = async (id: string) => {
    const run = await getRun(ctx.db, id);
    if (!run) throw notFound(`Run ${id}`);
    return run;
  };
  return { ctx, loadRun };
}

type RunsContext = ReturnType<typeof runsContext>;

const listRunsRouteDoc: RouteDoc = {
  summary: 'List runs',
  query: ListRunsQuery,
  response: z.array(RunSchema),
  agentQuery: 'agent_id',
};

async function listRunsRoute({ ctx }: RunsContext, req: Request, res: Response) {
  const query = parseQuery(ListRunsQuery, req);
  const runs = await listRuns(
    ctx.db,
    {
      agentId: query.agent_id,
      conversationId: query.conversation_id,
      statuses: query.statuses as RunStatus[] | undefined,
      background: query.background,
      stopReason: query.stop_reason,
      active: query.active,
    },
    query,
  );
  res.json(runs.map(runShape));
}

const retrieveRunDoc: RouteDoc = {
  summary: 'Retrieve run',
  description:
    'With `pending_approval`: what the run waits for, when it is the one paused for approval; and, an extension, `approvals`: the pauses the run made or answered, with who answered what (kept when messages are reset).',
  response: RunWithPendingApprovalSchema,
};

async function retrieveRun({ ctx, loadRun }: RunsContext, req: Request<{ runId: string }>, res: Response) {
  const run = await loadRun(req.params.runId);
  const scope = { agentId: run.agent_id, conversationId: run.conversation_id };
  const pending = await pendingApproval(ctx.db, scope);
  const waiting = pending?.run_id === run.id ? await pendingApprovalView(ctx.db, pending) : null;
  const records = await approvalRecordsOfRun(ctx.db, run.id);
  const approvals = await Promise.all(
    records.map((r) => approvalRecordShape(ctx.db, r, pending?.message_id === r.request_message_id)),
  );
  res.json({ ...runShape(run), pending_approval: waiting, approvals });
}

const retrieveUsageForRunDoc: RouteDoc = {
  summary: 'Retrieve usage for run',
  response: UsageStatisticsSchema,
};

async function retrieveUsageForRun({ loadRun }: RunsContext, req: Request<{ runId: string }>, res: Response) {
  res.json(usageShape((await loadRun(req.params.runId)).usage));
}

const listMessagesForRunDoc: RouteDoc = {
  summary: 'List messages for run',
  query: RunMessagesQuery,
  response: z.array(LettaMessageSchema),
};

async function listMessagesForRun(
  { ctx, loadRun }: RunsContext,
  req: Request<{ runId: string }>,
  res: Response,
) {
  const run = await loadRun(req.params.runId);
  const page = parseQuery(RunMessagesQuery, req);
  res.json((await listMessages(ctx.db, { runId: run.id }, page)).flatMap(lettaMessages));
}

// A stream that dropped goes on from the last message its client has (`starting_after`).
const retrieveStreamForRunDoc: RouteDoc = {
  summary: 'Retrieve stream for run',
  readOnly: true,
  description: 'Resumes a dropped stream after `starting_after` (the `seq_id` of the last message received).',
  body: RetrieveStreamSchema,
  response: LettaStreamingResponseSchema,
  streams: true,
};

async function retrieveStreamForRun(
  { ctx, loadRun }: RunsContext,
  req: Request<{ runId: string }>,
  res: Response,
) {
  const run = await loadRun(req.params.runId);
  const body = parseBody(RetrieveStreamSchema, req);
  await streamRun(ctx, res, run, runLiveness(ctx, run), {
    includePings: body.include_pings,
    startingAfter: body.starting_after,
  });
}
