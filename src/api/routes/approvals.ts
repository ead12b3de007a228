/**
 * The approval inbox, an extension of Letta's API: what waits for an answer across agents, each pause
 * with what the approver needs to judge it, an answer by the pause's id, and a stream of changes for
 * the approval page. Answers go through the same path as Letta's approval messages (answerPausedTurn).
 */
import type { Response, Request } from 'express';
import { z } from 'zod';
import type { ApiContext } from '../context';
import { notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { answererOf, principalOf } from '../scoped-access';
import { lettaMessages } from '../letta-shapes';
import {
  AnswerApprovalSchema,
  AnsweredApprovalSchema,
  ApprovalDetailSchema,
  ListApprovalsQuery,
  WaitingApprovalSchema,
} from '../schemas/approvals';
import { getApprovalRecord, listWaitingCalls, stillWaits } from '../../db/approval-requests';
import { approvalRecordShape, temporalUrlOf, waitingShape } from '../approval-shapes';
import { getAgentRow } from '../../db/agents';
import { getMessage, listMessages } from '../../db/messages';
import { answerApprovalRequest } from '../../agent/turns';
import type { ApprovalAnswer } from '../../approvals/answering';
import { openEventStream } from '../event-stream';
import { ApprovalChangeFeed } from '../../approvals/inbox-events';

/** Messages shown before a request, for its context. */
const CONTEXT_MESSAGES = 12;

export function approvalsRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Approvals');
  const on = routeTable(router, approvalsContext(ctx));
  on.get('/v1/approvals', listPendingApprovalsDoc, listPendingApprovals);
  on.get('/v1/approvals/stream', streamApprovalChangesDoc, streamApprovalChanges);
  on.get('/v1/approvals/:approvalRequestId', retrieveApprovalRequestDoc, retrieveApprovalRequest);
  on.post(
    '/v1/approvals/:approvalRequestId/answer',
    answerApprovalRequestRouteDoc,
    answerApprovalRequestRoute,
  );

  return router;
}

/** What the routes of approvalsRouter share. */
function approvalsContext(ctx: ApiContext) {
  /** The agents a scoped token may see approvals of; none for the password: all of them. */
  const visibleAgents = (res: Response, agentId?: string): string[] | undefined => {
    const principal = principalOf(res);
    if (principal.kind === 'full') return agentId ? [agentId] : undefined;
    const mine = principal.grant.agents('read_messages');
    return agentId ? mine.filter((id) => id === agentId) : mine;
  };

  /** The pause, whether it still waits; 404 for one the caller may not see (tokens learn nothing). */
  const loadRecord = async (id: string) => {
    const record = await getApprovalRecord(ctx.db, id);
    if (!record) throw notFound(`Approval request ${id}`);
    return { record, pending: await stillWaits(ctx.db, id) };
  };
  return { ctx, visibleAgents, loadRecord };
}

type ApprovalsContext = ReturnType<typeof approvalsContext>;

const listPendingApprovalsDoc: RouteDoc = {
  summary: 'List pending approvals',
  description:
    'An extension: every tool call waiting for an answer (a person’s approval or a client’s tool return) across agents, newest first; a scoped token sees its agents’ only.',
  query: ListApprovalsQuery,
  response: z.array(WaitingApprovalSchema),
  filtersByToken: true,
};

async function listPendingApprovals({ ctx, visibleAgents }: ApprovalsContext, req: Request, res: Response) {
  const query = parseQuery(ListApprovalsQuery, req);
  const calls = await listWaitingCalls(
    ctx.db,
    {
      agentIds: visibleAgents(res, query.agent_id),
      toolName: query.tool_name,
      tag: query.tag,
      olderThanSeconds: query.older_than_seconds,
      newerThanSeconds: query.newer_than_seconds,
    },
    query,
  );
  res.json(calls.map((call) => waitingShape(ctx.config, call)));
}

const streamApprovalChangesDoc: RouteDoc = {
  summary: 'Stream approval changes',
  description:
    'An extension: server-sent events, `approvals` with `{approval_request_id, change: "requested" | "answered"}` as pauses begin and end (for the approval page).',
  filtersByToken: true,
  streams: true,
};

async function streamApprovalChanges({ ctx, visibleAgents }: ApprovalsContext, _req: Request, res: Response) {
  return streamChanges(ctx, res, visibleAgents(res));
}

const retrieveApprovalRequestDoc: RouteDoc = {
  summary: 'Retrieve approval request',
  description:
    'An extension: a pause with its context (memory as it was, the last messages) and, once answered, who answered what.',
  response: ApprovalDetailSchema,
};

async function retrieveApprovalRequest(
  { ctx, loadRecord }: ApprovalsContext,
  req: Request<{ approvalRequestId: string }>,
  res: Response,
) {
  const { record, pending } = await loadRecord(req.params.approvalRequestId);
  const agent = await getAgentRow(ctx.db, record.agent_id);
  const messages = await listMessages(
    ctx.db,
    { agentId: record.agent_id, conversationId: record.conversation_id },
    { before: record.request_message_id, limit: CONTEXT_MESSAGES - 1, order: 'asc' },
    ['user', 'assistant', 'tool', 'approval'],
  );
  const request = await getMessage(ctx.db, record.request_message_id);
  res.json({
    ...(await approvalRecordShape(ctx.db, record, pending)),
    agent_name: agent?.name ?? null,
    blocks: record.blocks,
    messages: [...messages, ...(request ? [request] : [])].flatMap(lettaMessages),
    temporal_url: temporalUrlOf(ctx.config, record.workflow_id),
  });
}

const answerApprovalRequestRouteDoc: RouteDoc = {
  summary: 'Answer approval request',
  description:
    'An extension: answers every waiting call of the request (as an approval message would) without waiting for the agent to go on. `X-Letta-Approver` names the person in the audit trail.',
  body: AnswerApprovalSchema,
  response: AnsweredApprovalSchema,
};

async function answerApprovalRequestRoute(
  { ctx, loadRecord }: ApprovalsContext,
  req: Request<{ approvalRequestId: string }>,
  res: Response,
) {
  const body = parseBody(AnswerApprovalSchema, req);
  const { record } = await loadRecord(req.params.approvalRequestId);
  const { run } = await answerApprovalRequest(ctx, record, {
    answers: body.approvals as ApprovalAnswer[],
    answeredBy: answererOf(res),
  });
  res.json({ approval_request_id: record.request_message_id, run_id: run.id, status: run.status });
}

/** Sends an event for each pause that begins or ends among the visible agents, until the client goes. */
async function streamChanges(ctx: ApiContext, res: Response, agentIds: string[] | undefined) {
  // Until the client goes, or the server stops.
  const closed = AbortSignal.any([openEventStream(res), ctx.approvalWakes.stopped]);
  const feed = new ApprovalChangeFeed(ctx.db, agentIds);
  try {
    await feed.start();
    res.write(': connected\n\n');
    while (!closed.aborted) {
      await ctx.approvalWakes.next(closed);
      if (closed.aborted) break;
      const events = await feed.read();
      for (const event of events) res.write(`event: approvals\ndata: ${JSON.stringify(event)}\n\n`);
      if (!events.length) res.write(': keep-alive\n\n');
    }
  } catch (error) {
    // The client learns of it by the stream's end, and reconnects.
    ctx.log.warn({ error: (error as Error).message }, 'approval stream ended by an error');
  }
  res.end();
}
