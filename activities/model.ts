/** One model call: load the context from the database, call the provider, store the reply. */
import { offeredToModels } from '../src/mcp/tool-sync';
import { randomUUID } from 'node:crypto';
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { newId } from '../src/ids';
import { getRun, isActiveRun, lockRun, startRunWithInput } from '../src/db/runs';
import { insertMessage, type NewMessage } from '../src/db/messages';
import { readModelCall } from '../src/db/model-calls';
import { TranscriptCache } from '../src/db/transcripts';
import type { InputMessage, MessageRow, ToolRow, TranscriptRow } from '../src/db/rows';
import { pendingApproval } from '../src/db/conversations';
import { compiledPrompt } from '../src/agent/agents';
import { withRequestContext } from '../src/agent/request-context';
import { modelContext } from '../src/memory/context';
import { HistoryInvariantError } from '../src/memory/history-invariant';
import { parseHandle } from '../src/llm';
import {
  llmErrorType,
  ModelApiError,
  type ChatMessage,
  type FunctionSchema,
  type ModelDelta,
  type ModelReply,
} from '../src/llm/types';
import { tokenPublisher } from '../src/db/token-deltas';
import { errorText } from '../src/temporal/connection';
import { canBeStrict, strictParameters } from '../src/schemas/strict-mode';
import { inlineRefs } from '../src/schemas/json-refs';
import type { Queryable } from '../src/db';
import type { ActivityDeps } from './deps';
import { noteProgress, withHeartbeats } from './heartbeat';
import { attemptInterrupted, cancelledByPerson, interruption } from './interruption';
import { flushToolReturns, storeRequestInput } from './run-records';
import { enterPause, waitOf } from './approvals';
import { waitingCallIds, waitSettings } from '../src/approvals/policies';
import { addUsage } from '../contracts/usage';
import type { CallModelInput, ClientTool, StepReply, TokenUsage } from '../contracts/payloads';
import { finalReplyStopReason } from '../contracts/stop-reasons';
import { replyEndsRun } from '../contracts/turn-decisions';
import { storeRunEnd } from './run';
import { startRunCallback } from './deps';
import type { ModelActivities } from '../contracts/activities';
import { LLM_API_ERROR } from '../contracts/errors';
import { tracedProvider } from '../src/observability/genai';

/**
 * A server tool as the model sees it: in strict form when the agent's `llm_config.strict` is on and
 * the schema can be strict; one with a free-form object (a bare `dict` parameter) cannot, and goes as
 * it is (Letta's convert_to_structured_output refuses it). Its `$ref`s to its own definitions are
 * inlined for every provider (Gemini takes none).
 */
function serverToolSchema(tool: ToolRow, agentStrict: boolean): FunctionSchema {
  const schema = tool.json_schema as {
    name?: string;
    description?: string;
    parameters?: Record<string, unknown>;
  };
  const parameters = inlineRefs(schema.parameters ?? { type: 'object', properties: {} });
  const strict = agentStrict && canBeStrict(parameters);
  return {
    name: tool.name,
    description: schema.description ?? tool.description ?? undefined,
    ...(strict ? { parameters: strictParameters(parameters), strict: true } : { parameters }),
  };
}

const clientToolSchema = (tool: ClientTool): FunctionSchema => ({
  name: tool.name,
  description: tool.description ?? undefined,
  parameters: inlineRefs(tool.parameters ?? { type: 'object', properties: {} }),
});

/** The allowed server tools, then the request's client tools, which replace server tools of their name. */
function offeredTools(
  tools: ToolRow[],
  allowed: string[],
  clientTools: ClientTool[],
  strict: boolean,
): FunctionSchema[] {
  const clientNames = new Set(clientTools.map((t) => t.name));
  return [
    ...tools
      .filter((t) => allowed.includes(t.name) && !clientNames.has(t.name) && offeredToModels(t))
      .map((t) => serverToolSchema(t, strict)),
    ...clientTools.map(clientToolSchema),
  ];
}

/**
 * The stored reply as the turn sees it: with tool calls, which of them wait (its approval request); one
 * that ends its request says with what stop reason.
 */
function replyOf(message: MessageRow, input: CallModelInput): StepReply {
  const meta = (message.metadata ?? {}) as {
    usage?: TokenUsage;
    finish_reason?: StepReply['finishReason'];
    approval_request?: { tool_call_ids: string[] };
  };
  const reply: StepReply = {
    messageId: message.id,
    stepId: message.step_id!,
    toolCalls: (message.tool_calls ?? []).map((call) => ({ id: call.id, name: call.name })),
    finishReason: meta.finish_reason ?? 'stop',
    usage: meta.usage ?? { promptTokens: 0, completionTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 },
  };
  if (reply.toolCalls.length) reply.waitingCallIds = meta.approval_request?.tool_call_ids ?? [];
  return replyEndsRun(reply, input.endsRunWhenFinal)
    ? { ...reply, stopReason: finalReplyStopReason(reply.finishReason) }
    : reply;
}

/**
 * A failure the workflow reads as `llm_api_error`, with Letta's error type as its detail; retried by
 * the policy unless the provider refused.
 */
function modelFailure(error: unknown): ApplicationFailure {
  const known = error instanceof ModelApiError;
  return ApplicationFailure.create({
    message: (error as Error)?.message ?? String(error),
    type: LLM_API_ERROR,
    nonRetryable: known && !error.retryable,
    details: [known ? llmErrorType(error) : 'llm_error'],
  });
}

/**
 * The model's view of the transcript, then the messages the request brought (stored with the reply). A
 * broken history invariant fails the model call, never retried.
 */
function requestMessages(
  context: { system: string; summary: string | null; transcript: TranscriptRow[] },
  requestInput: InputMessage[],
): ChatMessage[] {
  try {
    return [
      ...modelContext(context.system, context.transcript, context.summary),
      ...requestInput.map((message) => ({ role: message.role, content: message.text })),
    ];
  } catch (error) {
    if (error instanceof HistoryInvariantError)
      throw ApplicationFailure.nonRetryable(error.message, error.name);
    throw error;
  }
}

/**
 * Every tool call gets an id of ours as its reply is stored: executions, returns and approvals are keyed
 * by it. Providers' ids are not unique: llama.cpp, Ollama and vLLM number calls per request (`call_0`),
 * so one agent's call could find another's recorded result. The form (`call_` and 24 letters and
 * digits) is one every provider takes back in the history.
 */
const ownToolCallId = () => `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`;

/** Whether a waiting call is the client's to run, or a server tool's waiting for a person. */
const kindOf = (call: { name: string }, clientTools: ClientTool[]) =>
  clientTools.some((tool) => tool.name === call.name) ? ('client_tool' as const) : ('approval' as const);

/**
 * A streamed reply's deltas handed on and counted: the call's heartbeats carry the count, so the
 * Temporal UI shows the pending call's progress.
 */
function streamedWithProgress(onDelta: (delta: ModelDelta) => void) {
  let deltas = 0;
  return (delta: ModelDelta) => {
    onDelta(delta);
    noteProgress({ deltas: ++deltas });
  };
}

/**
 * The reply's pieces as a token stream shows them: named by the reply's message, step and call ids.
 * Without parallel tool calls only the first call is kept, so only its pieces go. A call of a tool
 * whose policy reads its arguments goes whole once stored, as an approval request or not: which, only
 * its complete arguments tell.
 */
function tokenStream(
  db: Queryable,
  input: CallModelInput,
  clientTools: ClientTool[],
  reply: { id: string; stepId: string; callIds: string[] },
  onError: (error: unknown) => void,
) {
  const publisher = tokenPublisher(
    db,
    { run_id: input.runId, message_id: reply.id, step_id: reply.stepId },
    onError,
  );
  const names: string[] = [];
  const waitsByName = (name: string) =>
    input.approvalTools.includes(name) || clientTools.some((tool) => tool.name === name);
  const decidedByArguments = (name: string | undefined) =>
    !clientTools.some((tool) => tool.name === name) &&
    (input.approvalRules ?? []).some((rule) => rule.tool_name === name && rule.when?.length);
  const onDelta = (delta: ModelDelta) => {
    if (delta.kind !== 'tool_call') return publisher.push({ part: delta.kind, text: delta.text });
    if (delta.index > 0 && !input.parallelToolCalls) return;
    if (delta.name) names[delta.index] = (names[delta.index] ?? '') + delta.name;
    if (decidedByArguments(names[delta.index])) return;
    publisher.push({
      part: 'tool_call',
      tool_call_id: (reply.callIds[delta.index] ??= ownToolCallId()),
      ...(delta.name ? { name: delta.name } : {}),
      arguments: delta.arguments,
      approval: waitsByName(names[delta.index] ?? ''),
    });
  };
  return { onDelta, close: () => publisher.close() };
}

/** What a model call works with: the process's dependencies and the transcripts kept between steps. */
interface ModelCallDeps extends ActivityDeps {
  transcripts: TranscriptCache;
}

export function modelActivities(deps: ActivityDeps) {
  const call = { ...deps, transcripts: new TranscriptCache(deps.transcriptCacheMessages ?? 0) };
  return {
    async callModel(input: CallModelInput): Promise<StepReply> {
      return notifyPause(call, input, await callModelOnce(call, input));
    },
  } satisfies ModelActivities;
}

/**
 * One model call: the request's earlier tool returns flushed, its context read, the provider asked,
 * its reply recorded. A retried call whose reply was stored returns that reply, as it stands now.
 */
async function callModelOnce(deps: ModelCallDeps, input: CallModelInput): Promise<StepReply> {
  const read = await readForModelCall(deps, input);
  const { stored, agent } = read;
  if (stored) return { ...replyOf(stored, input), ...(await pausedBy(deps.db, stored, input)) };
  if (!agent) throw ApplicationFailure.nonRetryable(`agent ${input.agentId} no longer exists`, 'AgentGone');
  const handle = agent.model ?? `${agent.llm_config.model_endpoint_type}/${agent.llm_config.model}`;
  const parsed = parseHandle(handle);
  if (!parsed) throw ApplicationFailure.nonRetryable(`Invalid model handle '${handle}'`, LLM_API_ERROR);
  const context = { ...read, agent };
  const { reply, answer } = await askModel(deps, input, context, parsed);
  return recordReply(deps, input, context, { ...reply, handle }, answer);
}

/**
 * The reply recorded with the two decisions that go with it, each in the transaction that stores it:
 * the run's end, when the turn said a final reply ends it (`replyEndsRun`), and the pause of the calls
 * that wait (`waitingCallIds`: by their tools and, for a policy's conditions, their arguments).
 */
async function recordReply(
  deps: ModelCallDeps,
  input: CallModelInput,
  { agent, requestInput, clientTools, idempotencyKey }: ModelCallContext,
  reply: { id: string; stepId: string; callIds: string[]; handle: string },
  answer: ModelReply,
): Promise<StepReply> {
  // Without parallel tool calls, Letta keeps only the first call of a reply that has several.
  const toolCalls = (input.parallelToolCalls ? answer.toolCalls : answer.toolCalls.slice(0, 1)).map(
    (call, index) => ({ ...call, id: (reply.callIds[index] ??= ownToolCallId()) }),
  );
  const usage = usageOf(answer);
  // The calls that wait make the reply Letta's approval request.
  const waiting = waitingCallIds(toolCalls, { ...input, clientTools, rules: input.approvalRules ?? [] });
  const message: NewMessage = {
    id: reply.id,
    agent_id: agent.id,
    run_id: input.runId,
    step_id: reply.stepId,
    role: 'assistant',
    content: answer.text ? [{ type: 'text', text: answer.text }] : null,
    reasoning: answer.reasoning,
    tool_calls: toolCalls,
    metadata: {
      usage,
      finish_reason: answer.finishReason,
      model: reply.handle,
      ...(waiting.length ? { approval_request: { tool_call_ids: waiting } } : {}),
    },
    idempotency_key: idempotencyKey,
  };
  const store = async (q: Queryable) => {
    await storeRequestInput(q, agent.id, input.runId, requestInput);
    return insertMessage(q, message);
  };
  if (replyEndsRun({ toolCalls }, input.endsRunWhenFinal))
    return storeFinalReply(deps, input, store, message.id, usage);
  if (!waiting.length)
    return replyOf(requestInput.length ? await deps.db.transaction(store) : await store(deps.db), input);
  const asked = toolCalls.filter((call) => waiting.includes(call.id));
  return storePausedReply(deps, input, { store, replyId: message.id, asked, usage, clientTools }, agent);
}

/**
 * What a model call reads, at once on connections of their own: the request's messages, as its run
 * starts with its first call, and the call's context, once the tool returns of the step before are
 * flushed (the transcript holds them), not after the run's start: a request's first call reads as it
 * starts.
 */
async function readForModelCall({ db, transcripts }: ModelCallDeps, input: CallModelInput) {
  const idempotencyKey = `${input.runId}:model:${input.step}`;
  const reads = flushToolReturns(
    db,
    input.agentId,
    input.runId,
    input.pendingToolCallIds,
    input.followUpsFrom,
  ).then(() =>
    readModelCall(db, transcripts, { agentId: input.agentId, runId: input.runId, idempotencyKey }),
  );
  const [started, read] = await Promise.all([
    input.step === 0 ? startRunWithInput(db, input.runId) : undefined,
    reads,
  ]);
  return { ...read, requestInput: started ?? [], idempotencyKey };
}

type ModelCallRead = Awaited<ReturnType<typeof readForModelCall>>;

/** What a model call read, for an agent that exists. */
type ModelCallContext = ModelCallRead & { agent: NonNullable<ModelCallRead['agent']> };

/**
 * The provider's answer, streamed as tokens when the request asks: the reply's message, step and call
 * ids are chosen before the call, so a token stream names them as they will be stored.
 */
async function askModel(
  { db, providers, log }: ModelCallDeps,
  input: CallModelInput,
  { agent, conversationId, summary, transcript, clientTools, requestContext, requestInput }: ModelCallContext,
  parsed: { provider: string; model: string },
): Promise<{ reply: { id: string; stepId: string; callIds: string[] }; answer: ModelReply }> {
  const reply = { id: newId('message'), stepId: newId('step'), callIds: [] as string[] };
  const system = withRequestContext(compiledPrompt(agent, conversationId), requestContext);
  const messages = requestMessages({ system, summary, transcript }, requestInput);
  const tokens = input.streamTokens
    ? tokenStream(db, input, clientTools, reply, (error) =>
        log.warn({ error: errorText(error), runId: input.runId }, 'could not publish token deltas'),
      )
    : undefined;
  const { llm_config } = agent;
  try {
    const provider = tracedProvider(providers(parsed.provider), {
      name: parsed.provider,
      stepId: reply.stepId,
    });
    const request = {
      model: parsed.model,
      messages,
      tools: offeredTools(agent.tools, input.allowedTools, clientTools, Boolean(llm_config.strict)),
      toolChoice: input.toolChoice,
      parallelToolCalls: input.parallelToolCalls,
      temperature: llm_config.temperature ?? undefined,
      maxTokens: llm_config.max_tokens ?? undefined,
      reasoningEffort: llm_config.reasoning_effort ?? undefined,
    };
    const onDelta = tokens && streamedWithProgress(tokens.onDelta);
    const answer = await withHeartbeats(
      provider.complete(request, Context.current().cancellationSignal, onDelta),
    );
    return { reply, answer };
  } catch (error) {
    // Cancelled: so the workflow learns, rather than of a provider error. Stopped otherwise (a
    // shutdown past its grace): retried, the reply not stored.
    if (cancelledByPerson()) throw new CancelledFailure('the run was cancelled');
    if (attemptInterrupted()) throw interruption('the model call');
    throw modelFailure(error);
  } finally {
    // Every delta is out before the reply is stored: a stream then sees the reply as complete.
    await tokens?.close();
  }
}

const usageOf = (answer: ModelReply): TokenUsage => ({
  promptTokens: answer.usage.promptTokens,
  completionTokens: answer.usage.completionTokens,
  cachedInputTokens: answer.usage.cachedInputTokens ?? 0,
  reasoningTokens: answer.usage.reasoningTokens ?? 0,
});

/** A retried call whose reply was stored: the wait it entered then, as it stands now. */
async function pausedBy(
  q: Queryable,
  stored: MessageRow,
  input: CallModelInput,
): Promise<Partial<StepReply>> {
  if (!stored.metadata?.approval_request) return {};
  const scope = { agentId: input.agentId, conversationId: stored.conversation_id };
  return { approvalWait: waitOf(await pendingApproval(q, scope), stored.id) };
}

/**
 * A reply that pauses ends its run, and is an approval request: the run's callback and the agent's
 * approval notice go out (each started once, however often this is retried).
 */
async function notifyPause({ db, startWebhook }: ModelCallDeps, input: CallModelInput, reply: StepReply) {
  if (!reply.approvalWait) return reply;
  const { agentId, runId } = input;
  if ((await getRun(db, runId))?.callback_url) await startRunCallback(startWebhook, input);
  await startWebhook({ kind: 'approval_requested', id: reply.messageId, agentId });
  return reply;
}

/** A reply that ends its request, stored in the transaction that ends the run. */
async function storeFinalReply(
  { db, startWebhook, laneReleased }: ModelCallDeps,
  input: CallModelInput,
  store: (q: Queryable) => Promise<MessageRow>,
  replyId: string,
  usage: TokenUsage,
) {
  const { reply, callbackUrl, laneWaited } = await db.transaction(async (tx) => {
    const message = await store(tx);
    const reply = replyOf(message, input);
    // Stored before, by an attempt that ended the run with it.
    if (message.id !== replyId) return { reply, callbackUrl: null, laneWaited: undefined };
    const end = {
      agentId: input.agentId,
      runId: input.runId,
      stopReason: reply.stopReason!,
      usage: addUsage(input.requestUsage, usage),
      pendingToolCallIds: [],
    };
    return { reply, ...(await storeRunEnd(tx, end)) };
  });
  if (laneWaited) await laneReleased(laneWaited);
  if (callbackUrl) await startRunCallback(startWebhook, input);
  return reply;
}

/** A reply whose calls wait, with what its pause is entered with. */
interface PausedReply {
  store: (q: Queryable) => Promise<MessageRow>;
  replyId: string;
  /** The calls that wait. */
  asked: ModelReply['toolCalls'];
  usage: TokenUsage;
  clientTools: ClientTool[];
}

/**
 * The reply and the pause in one transaction, which locks the run's row first: a run a cancel has
 * ended meanwhile is left unpaused (see releaseCancelledPause).
 */
function storePausedReply(
  { db }: ModelCallDeps,
  input: CallModelInput,
  { store, replyId, asked, usage, clientTools }: PausedReply,
  agent: { id: string; approval_timeout_seconds: number | null },
): Promise<StepReply> {
  return db.transaction(async (tx) => {
    const run = await lockRun(tx, input.runId);
    const message = await store(tx);
    if (message.id !== replyId)
      return { ...replyOf(message, input), ...(await pausedBy(tx, message, input)) };
    if (!run || !isActiveRun(run)) return replyOf(message, input);
    const pause = {
      agentId: agent.id,
      runId: input.runId,
      messageId: message.id,
      toolCallIds: asked.map((call) => call.id),
      usage: addUsage(input.requestUsage, usage),
      ...waitSettings(
        input.approvalRules ?? [],
        asked.map((call) => call.name),
      ),
      calls: asked.map((call) => ({ ...call, kind: kindOf(call, clientTools) })),
    };
    return {
      ...replyOf(message, input),
      approvalWait: await enterPause(tx, pause, run, agent.approval_timeout_seconds),
    };
  });
}
