import type { Response, Request } from 'express';
import { z } from 'zod';
import { LettaMessageSchema, LettaResponseSchema, RunSchema, type LettaResponse } from '../schemas/responses';
import type { ApiContext } from '../context';
import { checkWebhookUrl } from '../../agent/webhooks';
import { HttpError, notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import {
  AgentMessagesQuery,
  AllMessagesQuery,
  CancelledRunsSchema,
  CancelSchema,
  LettaMessageSearchResultSchema,
  LettaRequestSchema,
  LettaStreamingResponseSchema,
  SearchMessagesSchema,
  type LettaRequest,
} from '../schemas/messages';
import { lettaMessages, messageSearchResults, runShape, usageShape } from '../letta-shapes';
import { getAgentRow } from '../../db/agents';
import { getMessage, listMessages, runMessagesAfter, searchMessages } from '../../db/messages';
import { getRun, isActiveRun, listRuns } from '../../db/runs';
import type { RunRow } from '../../db/rows';
import { contentText } from '../../memory/context';
import { answerPausedTurn, cancelTurns, startAgentTurn } from '../../agent/turns';
import { type ApprovalAnswer, type FollowUp } from '../../approvals/answering';
import { pendingApproval, type ConversationRef } from '../../db/conversations';
import { followRun, modelFailureAnswer } from '../follow-run';
import { outputMessages, stopReasonShape, streamRun } from '../run-stream';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { answererOf, turnChainOf } from '../scoped-access';

type InputMessage = NonNullable<LettaRequest['messages']>[number];

const followUpOf = (m: Extract<InputMessage, { type: 'message' }>): FollowUp => ({
  role: m.role,
  text: contentText(m.content),
  name: m.name,
  otid: m.otid,
});

/** Letta's approval forms, the deprecated single-call one included, as a list of answers. */
function answersOf(message: InputMessage): ApprovalAnswer[] {
  if (message.type === 'tool_return') return message.tool_returns;
  if (message.type !== 'approval') return [];
  if (message.approvals?.length) return message.approvals;
  if (message.approval_request_id && typeof message.approve === 'boolean') {
    return [
      {
        type: 'approval',
        tool_call_id: message.approval_request_id,
        approve: message.approve,
        reason: message.reason,
      },
    ];
  }
  throw new HttpError(422, 'An approval message needs approvals, or approve and approval_request_id');
}

/** The request's input: new messages to start a turn with, or an answer to a paused one (with follow-ups). */
function inputOf(body: LettaRequest): { answers?: ApprovalAnswer[]; messages: FollowUp[] } {
  if (body.input !== undefined && body.input !== null) {
    return { messages: [{ role: 'user', text: contentText(body.input) }] };
  }
  const messages = body.messages ?? [];
  const answers = messages.flatMap(answersOf);
  const plain = messages.flatMap((m) => (m.type === 'message' ? [followUpOf(m)] : []));
  return answers.length ? { answers, messages: plain } : { messages: plain };
}

// What the messages routes do, for an agent's default conversation and for the others alike.

/** Starts a turn, or answers the paused one, as the request's messages say (both 404 without the agent). */
async function startOrAnswerTurn(
  ctx: ApiContext,
  to: ConversationRef,
  body: LettaRequest,
  runType: string,
  background: boolean,
  res: Response,
  streamTokens = false,
) {
  const { answers, messages } = inputOf(body);
  const options = {
    ...to,
    clientTools: (body.client_tools ?? []).map((t) => ({
      name: t.name,
      description: t.description,
      parameters: t.parameters,
    })),
    maxSteps: body.max_steps,
    approvalTimeoutSeconds: body.approval_timeout_seconds,
    background,
    runType,
    streamTokens,
  };
  if (answers)
    return answerPausedTurn(ctx, { ...options, answers, followUps: messages, answeredBy: answererOf(res) });
  // An answer goes on with a run in flight, and so does a message a running tool call sends.
  const metadata = turnChainOf(res);
  if (!metadata) ctx.stopping.refuseNewTurns();
  const callbackUrl = body.callback_url
    ? checkWebhookUrl(body.callback_url, ctx.config.OUTBOUND_ALLOW_PRIVATE)
    : undefined;
  return startAgentTurn(ctx, {
    ...options,
    userMessages: messages,
    callbackUrl,
    metadata,
  });
}

/** A blocking request answers once its run has stopped; a streaming one streams it as it runs. */
export async function sendMessages(
  ctx: ApiContext,
  to: ConversationRef,
  body: LettaRequest,
  res: Response,
  streaming: boolean,
) {
  if (!streaming && (body.stream_tokens || !body.include_pings || body.background)) {
    throw new HttpError(422, 'stream_tokens, include_pings=false and background need streaming=true');
  }
  const runType = streaming ? 'send_message_streaming' : 'send_message';
  const streamTokens = streaming && body.stream_tokens;
  const { run, alive } = await startOrAnswerTurn(
    ctx,
    to,
    body,
    runType,
    streaming && body.background,
    res,
    streamTokens,
  );
  if (streaming)
    return streamRun(ctx, res, run, alive, {
      includePings: body.include_pings,
      types: body.include_return_message_types,
      tokens: streamTokens,
    });
  let closed = false;
  res.on('close', () => (closed = true));
  const stop = await followRun(ctx, run.id, alive, { abandoned: () => closed });
  if (!stop) return;
  const failed = modelFailureAnswer(stop);
  if (failed) return void res.status(failed.status).json(failed.body);
  const answer: LettaResponse = {
    messages: outputMessages(await runMessagesAfter(ctx.db, run.id, 0), body.include_return_message_types),
    stop_reason: stopReasonShape(stop.stopReason),
    usage: usageShape(stop.run.usage),
    logprobs: null,
    turns: null,
  };
  res.json(answer);
}

/**
 * Cancels the conversation's active runs (or those of `runIds`), a turn paused for approval included
 * (its pending calls are then denied), and answers once they have ended: cancelled, their tool calls
 * stopped, nothing half-written. Each run's status is then `cancelled`, or how it ended before.
 */
export async function cancelConversationRuns(
  ctx: ApiContext,
  to: ConversationRef,
  runIds: string[] | null | undefined,
) {
  const agent = await getAgentRow(ctx.db, to.agentId);
  if (!agent) throw notFound(`Agent ${to.agentId}`);
  const inConversation = (r: RunRow | undefined): r is RunRow =>
    r?.agent_id === to.agentId && r.conversation_id === to.conversationId;
  const active = runIds?.length
    ? (await Promise.all(runIds.map((id) => getRun(ctx.db, id)))).filter(
        (r): r is RunRow => inConversation(r) && isActiveRun(r),
      )
    : await listRuns(
        ctx.db,
        { agentId: to.agentId, conversationId: to.conversationId, active: true },
        { limit: 1000, order: 'asc' },
      );
  const targets = new Map(active.map((run) => [run.id, run.workflow_id]));
  const pending = await pendingApproval(ctx.db, to);
  if (pending && (!runIds?.length || runIds.includes(pending.run_id))) {
    targets.set(pending.run_id, pending.workflow_id);
  }
  if (targets.size === 0) throw new HttpError(409, 'No active runs to cancel');
  await cancelTurns(ctx, to, [...new Set(targets.values())], !runIds?.length);
  const ended = await Promise.all([...targets.keys()].map((id) => getRun(ctx.db, id)));
  return Object.fromEntries(ended.map((run) => [run!.id, run!.status]));
}

export function messagesRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Messages');
  const on = routeTable(router, messagesContext(ctx));
  on.post('/v1/agents/:agentId/messages', sendMessageDoc, sendMessage);
  on.post('/v1/agents/:agentId/messages/stream', sendMessageStreamingDoc, sendMessageStreaming);
  on.post('/v1/agents/:agentId/messages/async', sendMessageAsyncDoc, sendMessageAsync);
  on.get('/v1/agents/:agentId/messages', listMessagesRouteDoc, listMessagesRoute);
  on.get('/v1/messages', listAllMessagesDoc, listAllMessages);
  on.post('/v1/messages/search', searchAllMessagesDoc, searchAllMessages);
  on.get('/v1/messages/:messageId', retrieveMessageDoc, retrieveMessage);
  on.post('/v1/agents/:agentId/messages/cancel', cancelMessageDoc, cancelMessage);

  return router;
}

/** What the routes of messagesRouter share. */
function messagesContext(ctx: ApiContext) {
  const inDefault = (agentId: string): ConversationRef => ({ agentId, conversationId: null });

  const requireAgent = async (agentId: string) => {
    if (!(await getAgentRow(ctx.db, agentId))) throw notFound(`Agent ${agentId}`);
  };
  return { ctx, inDefault, requireAgent };
}

type MessagesContext = ReturnType<typeof messagesContext>;

const sendMessageDoc: RouteDoc = {
  summary: 'Send message',
  description:
    'Answers once the run has stopped. With `streaming: true`, answers instead with server-sent events, ' +
    'as `/v1/agents/{agentId}/messages/stream` does (each one a LettaStreamingResponse).',
  body: LettaRequestSchema,
  response: LettaResponseSchema,
};

async function sendMessage(
  { ctx, inDefault }: MessagesContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  const body = parseBody(LettaRequestSchema, req);
  await sendMessages(ctx, inDefault(req.params.agentId), body, res, body.streaming);
}

const sendMessageStreamingDoc: RouteDoc = {
  summary: 'Send message streaming',
  body: LettaRequestSchema,
  response: LettaStreamingResponseSchema,
  streams: true,
};

async function sendMessageStreaming(
  { ctx, inDefault }: MessagesContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  await sendMessages(ctx, inDefault(req.params.agentId), parseBody(LettaRequestSchema, req), res, true);
}

const sendMessageAsyncDoc: RouteDoc = {
  summary: 'Send message async',
  body: LettaRequestSchema,
  response: RunSchema,
};

async function sendMessageAsync(
  { ctx, inDefault }: MessagesContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  const { run } = await startOrAnswerTurn(
    ctx,
    inDefault(req.params.agentId),
    parseBody(LettaRequestSchema, req),
    'send_message_async',
    true,
    res,
  );
  res.json(runShape(run));
}

const listMessagesRouteDoc: RouteDoc = {
  summary: 'List messages',
  query: AgentMessagesQuery,
  response: z.array(LettaMessageSchema),
};

async function listMessagesRoute(
  { ctx, requireAgent }: MessagesContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  await requireAgent(req.params.agentId);
  const query = parseQuery(AgentMessagesQuery, req);
  // `default`: the agent's own conversation; a conversation's id: that one; none: all of them.
  const conversationId = query.conversation_id === 'default' ? null : query.conversation_id;
  const rows = await listMessages(ctx.db, { agentId: req.params.agentId, conversationId }, query);
  res.json(rows.flatMap(lettaMessages));
}

const listAllMessagesDoc: RouteDoc = {
  summary: 'List all messages',
  query: AllMessagesQuery,
  response: z.array(LettaMessageSchema),
};

async function listAllMessages({ ctx }: MessagesContext, req: Request, res: Response) {
  const { conversation_id, include_return_message_types: types, ...page } = parseQuery(AllMessagesQuery, req);
  const rows = await listMessages(ctx.db, { conversationId: conversation_id }, page);
  const messages = rows.flatMap(lettaMessages);
  res.json(types?.length ? messages.filter((m) => types.includes(m.message_type)) : messages);
}

const searchAllMessagesDoc: RouteDoc = {
  summary: 'Search all messages',
  body: SearchMessagesSchema,
  response: z.array(LettaMessageSearchResultSchema),
};

async function searchAllMessages({ ctx }: MessagesContext, req: Request, res: Response) {
  const body = parseBody(SearchMessagesSchema, req);
  const rows = await searchMessages(
    ctx.db,
    { agentId: body.agent_id ?? undefined, conversationId: body.conversation_id ?? undefined },
    {
      query: body.query,
      limit: body.limit,
      startDate: body.start_date ?? undefined,
      endDate: body.end_date ?? undefined,
    },
  );
  res.json(rows.flatMap(messageSearchResults));
}

// One stored message in Letta's forms (a row may be several: reasoning, then a tool call).
const retrieveMessageDoc: RouteDoc = {
  summary: 'Retrieve message',
  description:
    'Several LettaMessages when the stored message holds several parts (reasoning, then a tool call).',
  response: z.array(LettaMessageSchema),
};

async function retrieveMessage({ ctx }: MessagesContext, req: Request<{ messageId: string }>, res: Response) {
  const row = await getMessage(ctx.db, req.params.messageId);
  if (!row) throw notFound(`Message ${req.params.messageId}`);
  res.json(lettaMessages(row));
}

const cancelMessageDoc: RouteDoc = {
  summary: 'Cancel message',
  description: "Cancels the agent's active runs (or those named), and answers once they have ended.",
  body: CancelSchema,
  response: CancelledRunsSchema,
};

async function cancelMessage(
  { ctx, inDefault }: MessagesContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  const { run_ids: runIds } = parseBody(CancelSchema, req);
  res.json(await cancelConversationRuns(ctx, inDefault(req.params.agentId), runIds));
}
