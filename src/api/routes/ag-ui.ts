/**
 * AG-UI (the Agent-User Interaction protocol, 1.0): a frontend's run of an agent, answered with AG-UI's
 * events as the turn proceeds. An AG-UI thread is one of the agent's conversations and an AG-UI run is
 * the run its request starts or answers, so a run is as durable as any turn: a frontend tool's call and
 * an approval pause the turn (requires_approval) until a later run, on any API process and however
 * late, brings the tool's result or the interrupt's resume. The whole mapping is in docs/using-it.md
 * ("From an AG-UI frontend").
 */
import type { Request, Response } from 'express';
import { z } from 'zod';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import {
  EventType,
  type Event,
  type Interrupt,
  type JsonPatch,
  type RunAgentInput,
  type State,
} from '@ag-ui/core';
import { EventEncoder } from '@ag-ui/encoder';
import { compare } from 'fast-json-patch';
import type { ApiContext } from '../context';
import { HttpError, notFound } from '../errors';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { answererOf } from '../scoped-access';
import { CancelledRunsSchema } from '../schemas/messages';
import { MAX_AG_UI_ID_LENGTH, RunAgentInputDocSchema } from '../schemas/ag-ui';
import { ClientToolSchema } from '../../schemas/tools';
import { cancelConversationRuns } from './messages';
import { AgUiEvents, agUiMessages } from '../ag-ui-events';
import { answersFor, followUpOf, INTERRUPT_REASONS, lateResumes, trailingUserMessages } from '../ag-ui-input';
import { outputMessages } from '../run-stream';
import { followRun, type RunStop } from '../follow-run';
import { TokenChunks } from '../token-chunks';
import { getAgentRow, agentBlocks } from '../../db/agents';
import { getConversation, pendingApproval, type ConversationRef } from '../../db/conversations';
import { getRun, listRuns } from '../../db/runs';
import { listMessages } from '../../db/messages';
import type { RunRow } from '../../db/rows';
import { getApprovalRecord } from '../../db/approval-requests';
import {
  agUiRunOf,
  claimAgUiRun,
  ensureThreadConversation,
  releaseAgUiRun,
  settleAgUiRun,
  storedOtids,
  threadConversation,
  type AgUiRunRef,
} from '../../db/ag-ui';
import {
  answerPausedTurn,
  DEFAULT_MAX_STEPS,
  runLiveness,
  startAgentTurn,
  type TurnLiveness,
} from '../../agent/turns';
import { DomainError } from '../../errors';
import { checkRequestContext } from '../../agent/request-context';
import { newId } from '../../ids';

export function agUiRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('AG-UI');
  const on = routeTable(router, ctx);
  on.post('/v1/ag-ui/agents/:agentId', runAgentDoc, runAgent);
  on.post('/v1/ag-ui/agents/:agentId/threads/:threadId/cancel', cancelThreadDoc, cancelThread);
  return router;
}

/** How long a run id claimed by another request may take to start its run before a join gives up. */
const CLAIM_WAIT_MS = 10_000;

/** `forwardedProps` this server honours; every other key is ignored. */
const ForwardedPropsSchema = z.object({ max_steps: z.number().int().min(1).max(1000).optional() });

const runAgentDoc: RouteDoc = {
  summary: 'Run an agent (AG-UI)',
  description:
    "AG-UI 1.0's run: a RunAgentInput in, AG-UI events out (server-sent events, or AG-UI's protobuf framing when `Accept` asks for it). `threadId` names one of the agent's conversations (`default`, a conversation's id, or any other string: a conversation made for it); the same `runId` sent again joins that run. See docs/using-it.md, \"From an AG-UI frontend\".",
  body: RunAgentInputDocSchema,
  streams: true,
  errors: [404],
};

/** What this server asks beyond AG-UI's schema: ids it can keep, frontend tools as client tools. */
const StoredInputSchema = z.object({
  threadId: z.string().min(1).max(MAX_AG_UI_ID_LENGTH),
  runId: z.string().min(1).max(MAX_AG_UI_ID_LENGTH),
  tools: z.array(ClientToolSchema).optional(),
});

type Issue = { code: string; path: PropertyKey[]; message: string };

const invalidInput = (issues: Issue[]) =>
  new HttpError(
    422,
    issues.map((issue) => ({
      type: issue.code,
      loc: ['body', ...issue.path.map(String)],
      msg: issue.message,
    })),
  );

/** The request as AG-UI's own schema reads it, then as this server keeps it (422 naming each misfit). */
const parseInput = (req: Request): RunAgentInput => {
  const parsed = RunAgentInputSchema.safeParse(req.body);
  if (!parsed.success) throw invalidInput(parsed.error.issues);
  const stored = StoredInputSchema.safeParse(parsed.data);
  if (!stored.success) throw invalidInput(stored.error.issues);
  return parsed.data;
};

async function runAgent(ctx: ApiContext, req: Request<{ agentId: string }>, res: Response) {
  const input = parseInput(req);
  const props = ForwardedPropsSchema.safeParse(input.forwardedProps ?? {});
  if (!props.success) throw new HttpError(422, `forwardedProps: ${props.error.issues[0].message}`);
  checkRequestContext(input.context ?? [], ctx.config.REQUEST_CONTEXT_MAX_BYTES);
  const { agentId } = req.params;
  if (!(await getAgentRow(ctx.db, agentId))) throw notFound(`Agent ${agentId}`);
  const out = openAgUiStream(ctx, req, res);
  out.emit({ type: EventType.RUN_STARTED, threadId: input.threadId, runId: input.runId });
  try {
    const conversationId = await threadOf(ctx, agentId, input.threadId);
    const run = { ctx, res, out, input, to: { agentId, conversationId }, maxSteps: props.data.max_steps };
    await serveRun(run);
  } catch (error) {
    out.fail(error);
  } finally {
    out.end();
  }
}

/** The conversation a thread id names: `default`, one of the agent's conversations, or its own. */
async function threadOf(ctx: ApiContext, agentId: string, threadId: string): Promise<string | null> {
  const named = await namedConversation(ctx, agentId, threadId);
  if (named !== undefined) return named;
  return ensureThreadConversation(ctx.db, { agentId, threadId, conversationId: newId('conv') });
}

/** The conversation of a thread seen before (or named by its id); 404 for another. */
async function knownThreadOf(ctx: ApiContext, agentId: string, threadId: string): Promise<string | null> {
  const named = await namedConversation(ctx, agentId, threadId);
  if (named !== undefined) return named;
  const conversationId = await threadConversation(ctx.db, agentId, threadId);
  if (!conversationId) throw notFound(`Thread ${threadId}`);
  return conversationId;
}

/** The conversation a thread id names itself: the agent's default one, or one by its id. */
async function namedConversation(ctx: ApiContext, agentId: string, threadId: string) {
  if (threadId === 'default' || threadId === agentId) return null;
  if (!threadId.startsWith('conv-')) return undefined;
  const conversation = await getConversation(ctx.db, threadId);
  if (conversation?.agent_id !== agentId) throw notFound(`Conversation ${threadId}`);
  return conversation.id;
}

interface AgUiRun {
  ctx: ApiContext;
  res: Response;
  out: AgUiStream;
  input: RunAgentInput;
  to: ConversationRef;
  maxSteps?: number;
}

/** Starts or answers the thread's turn and streams its run; the same run id again joins that run. */
async function serveRun(run: AgUiRun) {
  const { ctx, input, to } = run;
  const ref: AgUiRunRef = { agentId: to.agentId, threadId: input.threadId, agUiRunId: input.runId };
  if (!(await claimAgUiRun(ctx.db, ref))) {
    const joined = await claimedRun(ctx, ref);
    return streamRun(run, joined, runLiveness(ctx, joined), { snapshot: true });
  }
  let started: { run: RunRow; alive: TurnLiveness } | undefined;
  try {
    started = await startOrAnswer(run);
  } finally {
    if (started) await settleAgUiRun(ctx.db, ref, started.run.id);
    else await releaseAgUiRun(ctx.db, ref);
  }
  if (started) return streamRun(run, started.run, started.alive, { snapshot: false });
  // Nothing new: the frontend joins the thread as it stands (its active run, if one runs).
  const [active] = await listRuns(ctx.db, { ...to, active: true }, { limit: 1, order: 'desc' });
  if (active) return streamRun(run, active, runLiveness(ctx, active), { snapshot: true });
  await sendSnapshots(run);
  await finishRun(run, undefined);
}

/** The run another request claimed the id for, once it has started it. */
async function claimedRun(ctx: ApiContext, ref: AgUiRunRef): Promise<RunRow> {
  for (const deadline = Date.now() + CLAIM_WAIT_MS; Date.now() < deadline;) {
    const runId = await agUiRunOf(ctx.db, ref);
    if (runId) return (await getRun(ctx.db, runId))!;
    if (runId === undefined) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new HttpError(409, `Run ${ref.agUiRunId} is being started by another request: send a new runId`);
}

/** The turn this run starts or the answer it brings; none when it brings nothing new. */
async function startOrAnswer(run: AgUiRun): Promise<{ run: RunRow; alive: TurnLiveness } | undefined> {
  const { ctx, input, to, res } = run;
  const options = {
    ...to,
    clientTools: (input.tools ?? []).map(({ name, description, parameters }) =>
      ClientToolSchema.parse({ name, description, parameters }),
    ),
    maxSteps: run.maxSteps ?? DEFAULT_MAX_STEPS,
    requestContext: input.context ?? [],
    background: false,
    runType: 'ag_ui_run',
    streamTokens: true,
  };
  const tail = trailingUserMessages(input.messages);
  const known = await storedOtids(
    ctx.db,
    to,
    tail.map((m) => m.id),
  );
  const followUps = tail.filter((m) => !known.has(m.id)).map(followUpOf);
  const pending = await pendingApproval(ctx.db, to);
  const waiting = pending ? ((await getApprovalRecord(ctx.db, pending.message_id))?.calls ?? []) : [];
  const answers = pending ? answersFor(input, waiting) : lateResumes(input);
  if (answers.length)
    return answerPausedTurn(ctx, { ...options, answers, followUps, answeredBy: answererOf(res) });
  if (!followUps.length) return undefined;
  ctx.stopping.refuseNewTurns();
  return startAgentTurn(ctx, { ...options, userMessages: followUps });
}

/** The thread's messages (the last page of them) and the agent's memory, as a frontend starts from. */
async function sendSnapshots(run: AgUiRun, withMessages = true): Promise<number> {
  const { ctx, to, out } = run;
  let lastSeq = 0;
  if (withMessages) {
    const rows = await listMessages(ctx.db, to, { limit: ctx.config.AG_UI_SNAPSHOT_MESSAGES, order: 'desc' });
    rows.reverse();
    lastSeq = rows.reduce((max, row) => Math.max(max, Number(row.seq)), 0);
    out.emit({ type: EventType.MESSAGES_SNAPSHOT, messages: rows.flatMap(agUiMessages) });
  }
  out.state = await memoryState(ctx, to.agentId);
  out.emit({ type: EventType.STATE_SNAPSHOT, snapshot: out.state });
  return lastSeq;
}

/** The agent's memory as AG-UI state: its blocks' values by label. */
async function memoryState(ctx: ApiContext, agentId: string): Promise<State> {
  const blocks = await agentBlocks(ctx.db, agentId);
  return { memory: Object.fromEntries(blocks.map((block) => [block.label, block.value])) };
}

/** What changed in the agent's memory since the state the frontend has, as a JSON Patch. */
async function sendStateDelta(run: AgUiRun) {
  const state = await memoryState(run.ctx, run.to.agentId);
  // compare() makes only add, remove and replace operations.
  const delta = compare(run.out.state, state) as JsonPatch;
  run.out.state = state;
  if (delta.length) run.out.emit({ type: EventType.STATE_DELTA, delta });
}

/**
 * Streams `row`'s run: a joined one after a snapshot of the thread up to where the stream takes over
 * (so nothing is sent twice or missed), a new one from its first message.
 */
async function streamRun(
  run: AgUiRun,
  row: RunRow,
  alive: TurnLiveness,
  { snapshot }: { snapshot: boolean },
) {
  const { ctx, out } = run;
  const afterSeq = await sendSnapshots(run, snapshot);
  const frontendResults = run.input.messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : []));
  const events = new AgUiEvents(out.emit, new Set(frontendResults));
  const tokens = new TokenChunks();
  // A joined run's input is stored with its first reply, after the snapshot: its pieces wait for it,
  // so that the frontend gets the user's message before the reply (whole, once stored).
  let piecesFollow = !snapshot;
  const stop = await followRun(ctx, row.id, alive, {
    afterSeq,
    onMessages: async (rows) => {
      piecesFollow = true;
      if (snapshot) for (const row of rows) if (row.role === 'user') events.userMessage(row);
      for (const message of outputMessages(rows))
        for (const chunk of tokens.ofStored(message)) events.chunk(chunk, true);
      if (rows.some((r) => r.role === 'tool')) await sendStateDelta(run);
    },
    onTokens: (notice) => {
      if (piecesFollow) tokens.ofNotice(notice).forEach((chunk) => events.chunk(chunk, false));
    },
    abandoned: () => out.gone.aborted,
  });
  events.finish();
  if (!stop) return;
  await sendStateDelta(run);
  await finishRun(run, stop);
}

/** The run's last event: RUN_FINISHED with its outcome, or RUN_ERROR. */
async function finishRun(run: AgUiRun, stop: RunStop | undefined) {
  const { out, input } = run;
  if (stop?.error) return out.fail(new HttpError(500, stop.error.message), stop.error.type);
  const result = stop ? { stop_reason: stop.stopReason, run_id: stop.run.id } : undefined;
  const finished = { type: EventType.RUN_FINISHED, threadId: input.threadId, runId: input.runId } as const;
  if (stop?.stopReason === 'cancelled')
    return out.emit({ ...finished, result, outcome: { type: 'cancelled' } });
  const waiting = await waitingNow(run);
  if (waiting.interrupts.length)
    return out.emit({ ...finished, result, outcome: { type: 'interrupt', interrupts: waiting.interrupts } });
  const pendingToolCallIds = waiting.toolCallIds.length ? { pendingToolCallIds: waiting.toolCallIds } : {};
  out.emit({ ...finished, result, outcome: { type: 'success', ...pendingToolCallIds } });
}

/** What the thread waits for now: interrupts (approvals, MCP questions) and frontend tool calls. */
async function waitingNow(run: AgUiRun): Promise<{ interrupts: Interrupt[]; toolCallIds: string[] }> {
  const { ctx, to } = run;
  const pending = await pendingApproval(ctx.db, to);
  const record = pending && (await getApprovalRecord(ctx.db, pending.message_id));
  if (!record) return { interrupts: [], toolCallIds: [] };
  const expiresAt = record.expires_at ? { expiresAt: new Date(record.expires_at).toISOString() } : {};
  const interrupts = record.calls
    .filter((call) => call.kind !== 'client_tool')
    .map((call): Interrupt => {
      const metadata = {
        tool_name: call.tool_name,
        arguments: parsedArguments(call.arguments),
        approval_request_id: record.request_message_id,
        run_id: record.run_id,
      };
      if (call.kind === 'elicitation' && call.elicitation)
        return {
          id: call.tool_call_id,
          reason: INTERRUPT_REASONS.elicitation,
          toolCallId: call.tool_call_id,
          message: call.elicitation.message,
          responseSchema: call.elicitation.requested_schema,
          ...expiresAt,
          metadata: { ...metadata, server: call.elicitation.server },
        };
      return {
        id: call.tool_call_id,
        reason: INTERRUPT_REASONS.approval,
        toolCallId: call.tool_call_id,
        message: `${call.tool_name} waits for approval`,
        responseSchema: APPROVAL_RESPONSE_SCHEMA,
        ...expiresAt,
        metadata,
      };
    });
  const toolCallIds = record.calls
    .filter((call) => call.kind === 'client_tool')
    .map((call) => call.tool_call_id);
  return { interrupts, toolCallIds };
}

const parsedArguments = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/** What a resume entry's payload may say of an approval. */
const APPROVAL_RESPONSE_SCHEMA = {
  type: 'object',
  properties: {
    approve: { type: 'boolean', default: true },
    reason: { type: 'string', description: 'why it is denied: the model reads it' },
    arguments: { type: 'object', description: 'the arguments the call runs with instead of the model’s' },
  },
};

const PROTO_MEDIA_TYPE = 'application/vnd.ag-ui.event+proto';

/** How long before a stop's grace ends a stream says so, ahead of the connection's cut. */
const STOP_MARGIN_MS = 1_000;

const SERVER_STOPPING =
  'This server is stopping; the run goes on. Send the same run again (the same threadId and runId) to join it.';

interface AgUiStream {
  emit: (event: Event) => void;
  /** A RUN_ERROR for `error`, in words the caller can act on. */
  fail: (error: unknown, code?: string) => void;
  end: () => void;
  gone: AbortSignal;
  /** The memory state the frontend has been sent. */
  state: State;
}

/** An answer of AG-UI events in the encoding the request accepts, kept alive while it waits. */
function openAgUiStream(ctx: ApiContext, req: Request, res: Response): AgUiStream {
  // AG-UI's protobuf framing only when asked for by name: `*/*` and no Accept get server-sent events.
  const accept = req.get('accept') ?? '';
  const encoder = new EventEncoder({
    accept: accept.includes(PROTO_MEDIA_TYPE) ? accept : 'text/event-stream',
  });
  const sse = !encoder.getContentType().includes('proto');
  res.writeHead(200, {
    'content-type': encoder.getContentType(),
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  const gone = new AbortController();
  res.on('close', () => gone.abort());
  let ended = false;
  const emit = (event: Event) => {
    if (!ended) res.write(sse ? encoder.encodeSSE(event) : Buffer.from(encoder.encodeBinary(event)));
  };
  const keepalive = sse
    ? setInterval(() => res.write(': keepalive\n\n'), ctx.config.STREAM_KEEPALIVE_MS)
    : undefined;
  const fail = (error: unknown, code?: string) => {
    const { message, kind } = failureOf(error, ctx);
    emit({ type: EventType.RUN_ERROR, message, code: code ?? kind });
    ended = true;
  };
  let cut: NodeJS.Timeout | undefined;
  const end = () => {
    clearInterval(keepalive);
    clearTimeout(cut);
    ended = true;
    if (!res.writableEnded) res.end();
  };
  // A stop (a deploy) ends the stream before its grace cuts the connection, saying how to go on.
  const endAtStop = () => {
    cut = setTimeout(
      () => {
        fail(new HttpError(503, SERVER_STOPPING), 'SERVER_STOPPING');
        end();
      },
      Math.max(0, ctx.stopping.graceLeftMs() - STOP_MARGIN_MS),
    );
  };
  if (ctx.stopping.signal.aborted) endAtStop();
  else ctx.stopping.signal.addEventListener('abort', endAtStop, { once: true });
  res.on('close', () => ctx.stopping.signal.removeEventListener('abort', endAtStop));
  return { emit, fail, end, gone: gone.signal, state: {} };
}

/**
 * An error's words for RUN_ERROR: the caller's mistakes as the API would answer them (a detail's own
 * message and code, such as PENDING_APPROVAL's), anything else logged.
 */
function failureOf(error: unknown, ctx: ApiContext): { message: string; kind: string } {
  const known =
    error instanceof HttpError
      ? { detail: error.detail, kind: String(error.status) }
      : error instanceof DomainError
        ? { detail: error.detail, kind: error.kind }
        : undefined;
  if (!known) {
    ctx.log.error({ err: error }, 'an AG-UI run failed');
    return { message: 'An unknown error occurred', kind: 'internal_error' };
  }
  if (typeof known.detail === 'string') return { message: known.detail, kind: known.kind };
  const said = known.detail as { message?: unknown; code?: unknown } | null;
  return {
    message: typeof said?.message === 'string' ? said.message : JSON.stringify(known.detail),
    kind: typeof said?.code === 'string' ? said.code : known.kind,
  };
}

const cancelThreadDoc: RouteDoc = {
  summary: 'Cancel a thread’s run (AG-UI)',
  description:
    "Cancels the thread's active run (its stream ends with RUN_FINISHED, outcome `cancelled`), a run paused on a frontend tool or an interrupt included, and answers once it has ended.",
  response: CancelledRunsSchema,
  errors: [404, 409],
};

async function cancelThread(
  ctx: ApiContext,
  req: Request<{ agentId: string; threadId: string }>,
  res: Response,
) {
  const { agentId, threadId } = req.params;
  if (!(await getAgentRow(ctx.db, agentId))) throw notFound(`Agent ${agentId}`);
  const conversationId = await knownThreadOf(ctx, agentId, threadId);
  res.json(await cancelConversationRuns(ctx, { agentId, conversationId }, null));
}
