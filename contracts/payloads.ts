/**
 * What the API, the workflows and their activities pass each other, as plain types (contracts/README.md
 * says why no zod). Ids and short summaries only: transcripts, tool arguments and tool returns stay in
 * the database (small histories; the Temporal UI shows ids and summaries).
 */
import type { ApprovalRule, ToolRule } from './tool-rules';
import type { ToolCallRecord } from './tool-rules';
import type { ToolMode } from './tool-modes';

/**
 * A tool the client runs, sent with a request (Letta's `client_tools`): the turn pauses for its return.
 * The API parses it with src/schemas/tools.ts ClientToolSchema, which is checked against this type.
 */
export interface ClientTool {
  name: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
}

export type { ToolMode } from './tool-modes';

export interface TurnTool {
  id: string;
  name: string;
  mode: ToolMode;
  parallel: boolean;
  /** The version resolved at the turn's start: the tool's activity runs that one (tool_versions). */
  version: number;
  /** The tool's own timeout (metadata.timeout_seconds), if it has one. */
  timeoutMs?: number;
  /** A built-in tool that works on the database alone: it runs as a local activity. */
  local?: boolean;
}

/** The agent's tools and rules as a request of a turn works with them. */
export interface TurnContext {
  tools: TurnTool[];
  toolRules: ToolRule[];
  /** llm_config.parallel_tool_calls, and no rules other than requires_approval (Letta's condition). */
  parallelToolCalls: boolean;
  model: string;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  cachedInputTokens: number;
  reasoningTokens: number;
}

/** What one run (one request) used: its model calls' tokens and their number. */
export interface RunUsage extends TokenUsage {
  stepCount: number;
}

export interface CallModelInput {
  agentId: string;
  runId: string;
  step: number;
  allowedTools: string[];
  toolChoice: 'auto' | 'required' | { name: string };
  parallelToolCalls: boolean;
  /**
   * Tools whose calls wait for an answer (client tools, requires_approval rules). The request's client
   * tools themselves the call reads from its run (older releases passed them here as `clientTools`).
   */
  approvalTools: string[];
  /**
   * The requires_approval rules: which calls of `approvalTools` wait, by their arguments, and for how
   * long (src/approvals/policies.ts). Turns that pass none pause every call of those tools.
   */
  approvalRules?: ApprovalRule[];
  /** Tool calls of the previous step whose returns are to be stored as one tool message first. */
  pendingToolCallIds: string[];
  /** An approval whose follow-up user messages go after those returns. */
  followUpsFrom?: string;
  /** What the request's earlier model calls used: a reply whose calls wait enters the pause with it. */
  requestUsage: RunUsage;
  /** The request streams tokens: the reply's pieces are published as the provider streams them. */
  streamTokens?: boolean;
  /**
   * A reply without tool calls ends the request: its run ends with it, in the transaction that stores
   * it (a plain turn then needs no activity after its model call).
   */
  endsRunWhenFinal?: boolean;
}

/** A tool call of a model reply, as the turn sees it: its id (ours) and its tool's name. */
export interface StepCall {
  id: string;
  name: string;
}

export interface ApprovalWait {
  /** How long to wait before the pending calls are denied; null: for as long as it takes. */
  timeoutMs: number | null;
  /** How long to wait before a reminder notice goes out (a policy's `reminder_after_seconds`). */
  reminderMs?: number;
}

export interface StepReply {
  messageId: string;
  stepId: string;
  toolCalls: StepCall[];
  finishReason: 'stop' | 'tool_calls' | 'length' | 'other';
  usage: TokenUsage;
  /** Set when the reply's calls wait for an answer and the call entered the pause: the run has ended. */
  approvalWait?: ApprovalWait;
  /**
   * The calls that wait for an answer, as the model call decided by their arguments. Replies recorded
   * before approval policies lack it: their calls wait by their tools' names (`approvalTools`).
   */
  waitingCallIds?: string[];
  /** Set when the reply ended the run (`endsRunWhenFinal`): the stop reason it ended with. */
  stopReason?: string;
}

export interface ToolCallInput {
  agentId: string;
  runId: string;
  stepId: string;
  messageId: string;
  toolCallId: string;
  toolName: string;
  /** Arguments tool rules fix for this call; they override the model's. */
  prefilledArgs?: Record<string, unknown>;
  /** The called tool, at the version the turn resolved at its start. */
  toolId: string;
  toolVersion: number;
}

export interface ToolOutcome {
  status: 'success' | 'error';
  /** The return text when it is short (conditional tool rules read it); omitted otherwise. */
  output?: string;
  /** Set when the call has no result yet: it waits for an answer to its MCP server's elicitation. */
  waitsFor?: 'elicitation';
}

/** Longest tool output carried in workflow state for conditional rules. */
export const SHORT_OUTPUT_CHARS = 256;

export interface RejectToolCallInput {
  agentId: string;
  runId: string;
  toolCallId: string;
  toolName: string;
  /** The error text the model sees instead of a result. */
  reason: string;
}

/** Why a run ended in `error` or `llm_api_error`: Letta's `error_type` and a short message. */
export interface AgentTurnError {
  type: string;
  message: string;
}

export interface FinishRunInput {
  agentId: string;
  runId: string;
  stopReason: string;
  usage: RunUsage;
  pendingToolCallIds: string[];
  followUpsFrom?: string;
  /** Why the run failed, for `error` and `llm_api_error`. */
  error?: AgentTurnError;
}

export interface EnterPauseInput {
  agentId: string;
  runId: string;
  /** The assistant message whose tool calls wait. */
  messageId: string;
  toolCallIds: string[];
  usage: RunUsage;
  /** The waiting calls' policies' smallest approval timeout, over the run's and the agent's. */
  timeoutSeconds?: number;
  /** The waiting calls' policies' smallest reminder delay. */
  reminderSeconds?: number;
}

/** Calls of a reply that wait for their MCP servers' elicitations: the run pauses for them. */
export type ElicitationPauseInput = Pick<
  EnterPauseInput,
  'agentId' | 'runId' | 'messageId' | 'toolCallIds' | 'usage'
>;

/** What the turn does with an answer: the calls to run now (approved or never in question). */
export interface ResumePlan {
  messageId: string;
  stepId: string;
  /** Every call of the paused reply, in order: their returns make up one tool message. */
  callIds: string[];
  toRun: StepCall[];
  /**
   * Client tools of calls in `toRun` (a client tool's call approved instead of answered with its
   * return), which the turn refuses to run; older releases' plans held all of the request's.
   */
  clientTools?: ClientTool[];
  maxSteps: number;
  streamTokens?: boolean;
}

export interface AgentTurnLimits {
  maxSteps: number;
  modelTimeoutMs: number;
  modelMaxAttempts: number;
  modelRetryInitialMs: number;
  toolTimeoutMs: number;
  toolMaxAttempts: number;
  /**
   * How many times running a model or tool call's activity again may follow its last attempt's being
   * cut short by its process stopping (ACTIVITY_MAX_INTERRUPTIONS): a stop is no failure of the call,
   * and must not use up its attempts. Turns started before it have none: 10.
   */
  maxInterruptions?: number;
  /** A model or tool activity that stops heartbeating this long (its worker died) is retried. */
  heartbeatTimeoutMs: number;
  /** How long an MCP tool call may take (unless the tool sets its own), and connecting to its server. */
  mcpCallTimeoutMs: number;
  mcpConnectTimeoutMs: number;
  /** How long a message to another agent may wait for its reply. */
  agentMessageTimeoutMs: number;
  /**
   * How often a waiting agent message looks whether its recipients' turns still run
   * (AGENT_MESSAGE_LOOK_MS); turns started before it have none: 30 s.
   */
  agentMessageLookMs?: number;
  /**
   * Sandboxed, run_code and MCP calls run as local activities of the agent worker (LOCAL_TOOL_CALLS),
   * not on their modes' task queues.
   */
  localToolCalls?: boolean;
  /** Model calls run as local activities of the agent worker (LOCAL_MODEL_CALLS). */
  localModelCalls?: boolean;
  /** The turn workflow's task timeout (STEP_TASK_TIMEOUT_MS); Temporal's default when unset. */
  taskTimeoutMs?: number;
  /**
   * A run of the turn continues as new once its history holds this many events (TURN_HISTORY_MAX_EVENTS);
   * turns started before it have none: when Temporal suggests it.
   */
  historyMaxEvents?: number;
}

export interface AgentTurnInput {
  agentId: string;
  runId: string;
  /** Where custom tools run: the turn's own task queue, or `tools-sandbox` for a pool (TOOL_WORKER_POOLS). */
  sandboxTaskQueue: string;
  /** Where MCP tools are called: the turn's own task queue, or `tools-mcp` for a pool. */
  mcpTaskQueue: string;
  /**
   * The request's client tools: in inputs older releases started turns with. A client tool's schema
   * stays with the run of the request that sent it (`request_config`, the schemas a request part:
   * src/db/request-parts.ts), and the model call, which reads it there, also decides that its calls
   * wait; so no payload of the turn carries the tools, however many a client sends with every request.
   */
  clientTools?: ClientTool[];
  limits: AgentTurnLimits;
  /** The request streams tokens (`stream_tokens`). */
  streamTokens?: boolean;
  /**
   * The agent's tools and rules, resolved by the API as it started the turn: given in full when the API
   * starts the turn itself; otherwise (a turn queued in its session, a turn that continued as new) the
   * turn loads them by `contextDigest`, so that a session's queue stays small.
   */
  context?: TurnContext;
  /** The digest the context is stored under (src/db/request-parts.ts); none from older releases. */
  contextDigest?: string;
  /** Set when the turn continued as new: where its request picks up. */
  continued?: ContinuedTurn;
  /** Set when the turn answers another agent's message that waits for the reply. */
  replyTo?: ReplyTo;
  /**
   * The turn's own workflow id, which the ids of its calls' child workflows extend. Not read from
   * workflowInfo(): a replay (an upgrade's check, the corpus's) runs a history under another id.
   * Turns started before it have none: their calls' ids name the agent and the run instead.
   */
  workflowId?: string;
}

/** The agent message's call that waits for a turn's run (workflows/agent-message-call.ts). */
export interface ReplyTo {
  /** The waiting call's workflow: the turn signals it `messageRunStopped`. */
  workflowId: string;
  /** The run it waits for: the turn tells it when this run stops (its end or its pause). */
  runId: string;
}

/** What `messageRunStopped` tells the waiting call: the run has stopped, its end stored. */
export interface RunStopped {
  runId: string;
}

/** A message to one recipient: the run it started there, or why it was not sent. */
export type AgentMessageDelivery = { agentId: string; runId: string } | { agentId: string; error: string };

/** What an agent message's call sent (activities/agent-messages.ts). */
export interface AgentMessagesSent {
  deliveries: AgentMessageDelivery[];
  /** The runs the call waits for: its messages' runs, unless it does not wait (the async tool). */
  awaited: string[];
  /** The call's own error (its arguments, an unknown recipient): nothing was sent. */
  error?: string;
}

/** An agent message's call, a child workflow of its turn (workflows/agent-message-call.ts). */
export interface AgentMessageCallInput {
  call: ToolCallInput;
  limits: AgentTurnLimits;
}

/** The last step of an agent message's call: its replies read, its result recorded. */
export interface AgentRepliesInput extends ToolCallInput {
  sent: AgentMessagesSent;
  /** How long the call waited at most: the error of a recipient still going names it. */
  timeoutMs: number;
}

/**
 * Where a turn that continued as new picks up, with the request it works on (AgentTurnInput's run,
 * client tools, stream and context are that request's): waiting for the answer to its pause, or going
 * on with its steps. An answer that came before the turn continued is used, never carried: the turn
 * continues as new only at a pause no answer has reached, and later answers reach the new run.
 */
export interface ContinuedTurn {
  /** The request's `max_steps` (limits.maxSteps is the first request's). */
  maxSteps: number;
  /** What the request's model calls used so far. */
  usage: RunUsage;
  /** The pause the request waits on. */
  pause?: ContinuedPause;
  /** The step the request goes on with, and what it needs of the steps before. */
  steps?: ContinuedSteps;
}

export interface ContinuedPause {
  messageId: string;
  calls: StepCall[];
  wait: ApprovalWait;
  /** When the wait began (workflow time, ms since the epoch): its reminder and timeout count from it. */
  waitStartedAt: number;
}

export interface ContinuedSteps {
  /** The index of the next step (its model call's idempotency key). */
  next: number;
  /** Tool calls of the last reply whose returns the next model call stores first. */
  pendingToolCallIds: string[];
  followUpsFrom?: string;
  /** The request's calls as the tool rules read them (carriedHistory in contracts/tool-rules.ts). */
  history: ToolCallRecord[];
}

export interface AgentTurnResult {
  stopReason: string;
  error?: AgentTurnError;
  usage: RunUsage;
}

/** An answer to a paused turn as the database records it. */
export interface RecordedAnswer {
  /** The run of the request that brought the answer; the turn continues under it. */
  runId: string;
  approvalMessageId: string;
  /** The assistant message whose tool calls were waiting. */
  requestMessageId: string;
  toolCallIds: string[];
}

/**
 * The answer to a paused turn, recorded in the database before the signal is sent: the signal carries
 * ids only (the tool returns live in the database), so the history shows which calls were answered.
 */
export interface ApprovalAnswered extends RecordedAnswer {
  /**
   * The agent's tools and rules as the answer came, for the request it continues the turn with, by the
   * digest they are stored under (src/db/request-parts.ts): the turn loads them only when they differ
   * from the ones it has, so an answer's signal stays a few hundred bytes however many tools the agent
   * has.
   */
  contextDigest?: string;
  /** The same in full, in signals older releases sent. */
  context?: TurnContext;
}

/** A turn queued in its conversation's session. */
export interface QueuedTurn {
  /** The turn's own workflow, a child of the session. */
  workflowId: string;
  input: AgentTurnInput;
  /** What the Temporal UI shows of it: a line in lists, and Markdown on its page. */
  summary: string;
  details?: string;
  /** How many turns may wait at most (AGENT_MAX_QUEUED_MESSAGES, as the API that sent it had it). */
  maxQueued: number;
}

export interface AgentSessionInput {
  agentId: string;
  /** A session ends after this long without a message (the next one starts a new session). */
  idleMs: number;
  /** Turns a session runs before it continues as new, to keep its history small. */
  maxStepsPerRun: number;
  /**
   * How often a turn waiting for its lane looks whether the turn holding it is still alive
   * (AGENT_LANE_LOOK_MS); sessions started before lanes have none: 10 s.
   */
  laneLookMs?: number;
  /** Turns still waiting, carried over when the session continued as new. */
  queue?: QueuedTurn[];
}

/** One uploaded file's ingestion (workflows/file-ingestion.ts), with the limits it runs under. */
export interface FileIngestionInput {
  fileId: string;
  /** What the Temporal UI names the file by. */
  fileName: string;
  /** Tokens per chunk and of overlap (the folder's `embedding_chunk_size`, FILE_CHUNK_OVERLAP). */
  chunkSize: number;
  chunkOverlap: number;
  /** Chunks per embedding request: one activity each (EMBEDDING_BATCH_SIZE). */
  batchSize: number;
  parseTimeoutMs: number;
  embedTimeoutMs: number;
  embedMaxAttempts: number;
  embedRetryInitialMs: number;
  heartbeatTimeoutMs: number;
}

/** A parsed file: how many chunks it has (their text stays in the database). */
export interface ParsedFile {
  totalChunks: number;
}

/** One embedding batch: the chunks [start, end) of a file. */
export interface EmbedBatchInput {
  fileId: string;
  start: number;
  end: number;
}

export interface FileIngestionResult {
  status: 'completed' | 'error' | 'gone';
  totalChunks?: number;
  error?: string;
}

/**
 * What a webhook tells (src/agent/webhooks.ts): a run's end (its completion callback), or an approval
 * request made, still unanswered after its policy's reminder delay, or expired (the approval webhook),
 * by the run's or the request message's id.
 */
export interface WebhookSubject {
  kind: 'run_callback' | 'approval_requested' | 'approval_reminder' | 'approval_expired';
  id: string;
  agentId: string;
}

/** The delivery of a webhook: what it tells, and how hard to try. */
export interface WebhookDelivery {
  subject: WebhookSubject;
  maxAttempts: number;
  initialRetryMs: number;
  maxRetryMs: number;
  /** One attempt, from the first lookup to the receiver's answer. */
  timeoutMs: number;
}
