/**
 * Letta's conversations (routers/v1/conversations.py): message histories of one agent, each with its
 * own session of turns (one at a time, in arrival order), all sharing the agent's memory blocks. The
 * agent's own history is the conversation `default`, named with the agent's id alongside.
 */
import type { Response, Request } from 'express';
import { z } from 'zod';
import type { ApiContext } from '../context';
import { HttpError, notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import { conversationShape, lettaMessages } from '../letta-shapes';
import {
  CancelledRunsSchema,
  CancelSchema,
  ConversationMessageSchema,
  LettaStreamingResponseSchema,
  RetrieveStreamSchema,
} from '../schemas/messages';
import { ConversationSchema, LettaMessageSchema, LettaResponseSchema } from '../schemas/responses';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { streamRun } from '../run-stream';
import { cancelTurns, runLiveness } from '../../agent/turns';
import { conversationRun } from '../../db/runs';
import {
  AgentOfDefaultQuery,
  CompactionResponseSchema,
  ConversationMessagesQuery,
  CreateConversationQuery,
  CreateConversationSchema,
  ForkConversationQuery,
  ListConversationsQuery,
  UpdateConversationSchema,
} from '../schemas/conversations';
import { cancelConversationRuns, sendMessages } from './messages';
import { getAgent, getAgentRow } from '../../db/agents';
import { compiledPrompt } from '../../agent/agents';
import { compactConversation } from '../../agent/compaction';
import { forkConversation } from '../../agent/conversations';
import { providerRegistry } from '../../llm';
import { llmErrorType, ModelApiError } from '../../llm/types';
import { llmFailureAnswer } from '../follow-run';
import {
  agentOfDefaultConversation,
  conversationMessageIds,
  deleteConversation,
  getConversation,
  insertConversation,
  listConversations,
  updateConversation,
  type ConversationRef,
} from '../../db/conversations';
import { listMessages } from '../../db/messages';
import { newId } from '../../ids';

export function conversationsRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Conversations');
  const on = routeTable(router, conversationsContext(ctx));
  on.post('/v1/conversations', createConversationDoc, createConversation);
  on.get('/v1/conversations', listConversationsRouteDoc, listConversationsRoute);
  on.get('/v1/conversations/:conversationId', retrieveConversationDoc, retrieveConversation);
  on.patch('/v1/conversations/:conversationId', updateConversationRouteDoc, updateConversationRoute);
  on.delete('/v1/conversations/:conversationId', deleteConversationRouteDoc, deleteConversationRoute);
  on.post('/v1/conversations/:conversationId/fork', forkConversationRouteDoc, forkConversationRoute);
  on.get('/v1/conversations/:conversationId/messages', listConversationMessagesDoc, listConversationMessages);
  on.post('/v1/conversations/:conversationId/messages', sendConversationMessageDoc, sendConversationMessage);
  on.post('/v1/conversations/:conversationId/cancel', cancelConversationDoc, cancelConversation);
  on.post('/v1/conversations/:conversationId/compact', compactConversationRouteDoc, compactConversationRoute);
  on.post('/v1/agents/:agentId/summarize', summarizeMessagesDoc, summarizeMessages);
  on.post('/v1/agents/:agentId/recompile', recompileAgentDoc, recompileAgent);
  on.post('/v1/conversations/:conversationId/recompile', recompileConversationDoc, recompileConversation);
  on.post(
    '/v1/conversations/:conversationId/stream',
    retrieveConversationStreamDoc,
    retrieveConversationStream,
  );

  return router;
}

/** What the routes of conversationsRouter share. */
function conversationsContext(ctx: ApiContext) {
  const providers = providerRegistry(ctx.config);

  const loadConversation = async (id: string) => {
    const conversation = await getConversation(ctx.db, id);
    if (!conversation) throw notFound(`Conversation ${id}`);
    return conversation;
  };

  /** `default` with the agent's id (or, as Letta still takes it, the agent's id alone), or a conversation's id. */
  const resolve = async (id: string, agentId: string | null | undefined): Promise<ConversationRef> => {
    const defaultOf = agentOfDefaultConversation(id, agentId);
    if (defaultOf) {
      if (!(await getAgentRow(ctx.db, defaultOf))) throw notFound(`Agent ${defaultOf}`);
      return { agentId: defaultOf, conversationId: null };
    }
    if (id === 'default') throw new HttpError(422, "The conversation 'default' needs agent_id");
    return { agentId: (await loadConversation(id)).agent_id, conversationId: id };
  };

  /** Compacts a conversation's history with the agent's model; a model failure answers as Letta's. */
  const compact = async (to: ConversationRef, res: Response) => {
    try {
      res.json(await compactConversation(ctx.db, providers, (await getAgent(ctx.db, to.agentId))!, to));
    } catch (error) {
      if (!(error instanceof ModelApiError)) throw error;
      const failed = llmFailureAnswer(llmErrorType(error), error.message);
      res.status(failed.status).json(failed.body);
    }
  };
  return { ctx, providers, loadConversation, resolve, compact };
}

type ConversationsContext = ReturnType<typeof conversationsContext>;

const createConversationDoc: RouteDoc = {
  summary: 'Create conversation',
  query: CreateConversationQuery,
  agentQuery: 'agent_id',
  body: CreateConversationSchema,
  response: ConversationSchema,
};

async function createConversation({ ctx }: ConversationsContext, req: Request, res: Response) {
  const { agent_id: agentId } = parseQuery(CreateConversationQuery, req);
  const body = parseBody(CreateConversationSchema, req);
  if (!(await getAgentRow(ctx.db, agentId))) throw notFound(`Agent ${agentId}`);
  const conversation = await insertConversation(ctx.db, {
    id: newId('conv'),
    agent_id: agentId,
    summary: body.summary ?? null,
    model: body.model ?? null,
    model_settings: body.model_settings ?? null,
    hidden: body.hidden ?? false,
  });
  res.json(conversationShape(conversation));
}

const listConversationsRouteDoc: RouteDoc = {
  summary: 'List conversations',
  query: ListConversationsQuery,
  response: z.array(ConversationSchema),
  agentQuery: 'agent_id',
};

async function listConversationsRoute({ ctx }: ConversationsContext, req: Request, res: Response) {
  const query = parseQuery(ListConversationsQuery, req);
  const rows = await listConversations(
    ctx.db,
    { agentId: query.agent_id, summarySearch: query.summary_search },
    query,
  );
  res.json(rows.map((row) => conversationShape(row)));
}

const retrieveConversationDoc: RouteDoc = { summary: 'Retrieve conversation', response: ConversationSchema };

async function retrieveConversation(
  { ctx, loadConversation }: ConversationsContext,
  req: Request<{ conversationId: string }>,
  res: Response,
) {
  const conversation = await loadConversation(req.params.conversationId);
  res.json(conversationShape(conversation, await conversationMessageIds(ctx.db, conversation.id)));
}

const updateConversationRouteDoc: RouteDoc = {
  summary: 'Update conversation',
  body: UpdateConversationSchema,
  response: ConversationSchema,
};

async function updateConversationRoute(
  { ctx, loadConversation }: ConversationsContext,
  req: Request<{ conversationId: string }>,
  res: Response,
) {
  await loadConversation(req.params.conversationId);
  const body = parseBody(UpdateConversationSchema, req);
  const updated = await updateConversation(ctx.db, req.params.conversationId, {
    summary: body.summary ?? undefined,
    model: body.model ?? undefined,
    model_settings: body.model_settings ?? undefined,
    last_message_at: body.last_message_at ?? undefined,
  });
  res.json(conversationShape(updated!));
}

// Its turns end first (cancelled, as a cancel ends them): none goes on storing into a history that is gone.
const deleteConversationRouteDoc: RouteDoc = {
  summary: 'Delete conversation',
  description: 'Its active runs are cancelled first.',
};

async function deleteConversationRoute(
  { ctx, loadConversation }: ConversationsContext,
  req: Request<{ conversationId: string }>,
  res: Response,
) {
  const conversation = await loadConversation(req.params.conversationId);
  await cancelTurns(ctx, { agentId: conversation.agent_id, conversationId: conversation.id }, [], true);
  if (!(await deleteConversation(ctx.db, conversation.id))) throw notFound(`Conversation ${conversation.id}`);
  res.json(null);
}

const forkConversationRouteDoc: RouteDoc = {
  summary: 'Fork conversation',
  description:
    "A new conversation of the same agent whose context starts as this one's: the summary of what a " +
    'compaction took out, then copies of the messages since, under ids of their own (`in_context_message_ids`), ' +
    'through `message_id` when given (with the results of its tool calls); calls still waiting for their ' +
    "results stay out. The system prompt is compiled afresh from the agent's blocks, as at every step. " +
    "`hidden`: left out of listings. `default` with `agent_id`: the agent's own history.",
  query: ForkConversationQuery,
  response: ConversationSchema,
};

async function forkConversationRoute(
  { ctx, resolve }: ConversationsContext,
  req: Request<{ conversationId: string }>,
  res: Response,
) {
  const query = parseQuery(ForkConversationQuery, req);
  const source = await resolve(req.params.conversationId, query.agent_id);
  const { conversation, messageIds } = await forkConversation(ctx.db, source, {
    messageId: query.message_id,
    hidden: query.hidden,
  });
  res.json(conversationShape(conversation, messageIds));
}

const listConversationMessagesDoc: RouteDoc = {
  summary: 'List conversation messages',
  description:
    "`default` with `agent_id` names the agent's own history (an agent's id alone: Letta's deprecated form).",
  query: ConversationMessagesQuery,
  response: z.array(LettaMessageSchema),
};

async function listConversationMessages(
  { ctx, resolve }: ConversationsContext,
  req: Request<{ conversationId: string }>,
  res: Response,
) {
  const query = parseQuery(ConversationMessagesQuery, req);
  const to = await resolve(req.params.conversationId, query.agent_id);
  const rows = await listMessages(ctx.db, to, query);
  res.json(rows.flatMap(lettaMessages));
}

const sendConversationMessageDoc: RouteDoc = {
  summary: 'Send conversation message',
  description:
    'Streams unless `streaming: false`: server-sent events, each one a LettaStreamingResponse; with ' +
    '`streaming: false`, answers once the run has stopped. `default` with `agent_id` in the body: the ' +
    "agent's own history (an agent's id alone: Letta's deprecated form).",
  body: ConversationMessageSchema,
  response: LettaResponseSchema,
};

async function sendConversationMessage(
  { ctx, resolve }: ConversationsContext,
  req: Request<{ conversationId: string }>,
  res: Response,
) {
  const body = parseBody(ConversationMessageSchema, req);
  const to = await resolve(req.params.conversationId, body.agent_id);
  if (to.conversationId) await updateConversation(ctx.db, to.conversationId, { last_message_at: new Date() });
  await sendMessages(ctx, to, body, res, body.streaming);
}

const cancelConversationDoc: RouteDoc = {
  summary: 'Cancel conversation',
  description: "Cancels the conversation's active runs (or those named), and answers once they have ended.",
  query: AgentOfDefaultQuery,
  body: CancelSchema,
  response: CancelledRunsSchema,
};

async function cancelConversation(
  { ctx, resolve }: ConversationsContext,
  req: Request<{ conversationId: string }>,
  res: Response,
) {
  const { agent_id: agentId } = parseQuery(AgentOfDefaultQuery, req);
  const { run_ids: runIds } = parseBody(CancelSchema, req);
  res.json(await cancelConversationRuns(ctx, await resolve(req.params.conversationId, agentId), runIds));
}

const compactConversationRouteDoc: RouteDoc = {
  summary: 'Compact conversation',
  description: "`default` with `agent_id` in the body: the agent's own history.",
  body: AgentOfDefaultQuery,
  response: CompactionResponseSchema,
};

async function compactConversationRoute(
  { compact, resolve }: ConversationsContext,
  req: Request<{ conversationId: string }>,
  res: Response,
) {
  const { agent_id: agentId } = parseBody(AgentOfDefaultQuery, req);
  await compact(await resolve(req.params.conversationId, agentId), res);
}

// The agent's own history (its default conversation): `agents.messages.compact`.
const summarizeMessagesDoc: RouteDoc = {
  summary: 'Summarize messages',
  description: "Compacts the agent's own history, as `/v1/conversations/default/compact` does.",
  response: CompactionResponseSchema,
};

async function summarizeMessages(
  { compact, resolve }: ConversationsContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  await compact(await resolve('default', req.params.agentId), res);
}

const recompileAgentDoc: RouteDoc = { summary: 'Recompile agent', response: z.string() };

async function recompileAgent(
  { ctx, resolve }: ConversationsContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  const to = await resolve('default', req.params.agentId);
  res.json(compiledPrompt((await getAgent(ctx.db, to.agentId))!, null));
}

// The system prompt as the conversation's next step gets it: compiled afresh at every step here,
// from the agent's current blocks, so there is nothing stored to rewrite (dry_run changes nothing).
const recompileConversationDoc: RouteDoc = {
  summary: 'Recompile conversation',
  description:
    'The system prompt as the next step gets it (compiled afresh at every step: nothing is stored). ' +
    "`default` with `agent_id` in the body or the query: the agent's own history.",
  query: AgentOfDefaultQuery,
  body: AgentOfDefaultQuery,
  response: z.string(),
};

async function recompileConversation(
  { ctx, resolve }: ConversationsContext,
  req: Request<{ conversationId: string }>,
  res: Response,
) {
  const { agent_id: agentId } = parseBody(AgentOfDefaultQuery, req);
  const to = await resolve(
    req.params.conversationId,
    agentId ?? parseQuery(AgentOfDefaultQuery, req).agent_id,
  );
  res.json(compiledPrompt((await getAgent(ctx.db, to.agentId))!, to.conversationId));
}

/**
 * A dropped stream of the conversation goes on: the run named, the one whose request carried `otid`,
 * or else the newest one still running.
 */
const retrieveConversationStreamDoc: RouteDoc = {
  summary: 'Retrieve conversation stream',
  readOnly: true,
  description:
    'Resumes a dropped stream after `starting_after`: of the run named, the one whose request carried ' +
    "`otid`, or else the newest one still running. `default` with `agent_id` in the body: the agent's own history.",
  body: RetrieveStreamSchema,
  response: LettaStreamingResponseSchema,
  streams: true,
};

async function retrieveConversationStream(
  { ctx, resolve }: ConversationsContext,
  req: Request<{ conversationId: string }>,
  res: Response,
) {
  const body = parseBody(RetrieveStreamSchema, req);
  const to = await resolve(req.params.conversationId, body.agent_id);
  const run = await conversationRun(ctx.db, to, { runId: body.run_id, otid: body.otid });
  if (!run) throw new HttpError(400, 'No active runs found for this conversation.');
  await streamRun(ctx, res, run, runLiveness(ctx, run), {
    includePings: body.include_pings,
    startingAfter: body.starting_after,
  });
}
