/**
 * What the API, the workflows and their activities pass each other, as zod schemas: the one source of
 * these types. Ids and short summaries only: transcripts, tool arguments and tool returns stay in the
 * database (small histories; the Temporal UI shows ids and summaries). Workflow code imports the types
 * alone, so zod stays out of its bundle.
 */
import { z } from 'zod';
import { ToolRuleSchema } from '../src/schemas/tool-rules';
import { ClientToolSchema } from '../src/schemas/tools';

export type ClientTool = z.infer<typeof ClientToolSchema>;

/** How a tool call is executed; it chooses the executor (workflows/tool-executors.ts). */
export const ToolModeSchema = z.enum(['builtin', 'code', 'agent', 'sandbox', 'mcp', 'client']);
export type ToolMode = z.infer<typeof ToolModeSchema>;

export const StepToolSchema = z.object({
  id: z.string(),
  name: z.string(),
  mode: ToolModeSchema,
  parallel: z.boolean(),
  /** The version resolved at the step's start: the tool's activity runs that one (tool_versions). */
  version: z.number().int(),
  /** The tool's own timeout (metadata.timeout_seconds), if it has one. */
  timeoutMs: z.number().optional(),
  /** A built-in tool that works on the database alone: it runs as a local activity. */
  local: z.boolean().optional(),
});
export type StepTool = z.infer<typeof StepToolSchema>;

/** The agent's tools and rules as a request of a step works with them. */
export const StepContextSchema = z.object({
  tools: z.array(StepToolSchema),
  toolRules: z.array(ToolRuleSchema),
  /** llm_config.parallel_tool_calls, and no rules other than requires_approval (Letta's condition). */
  parallelToolCalls: z.boolean(),
  model: z.string(),
});
export type StepContext = z.infer<typeof StepContextSchema>;

export const TokenUsageSchema = z.object({
  promptTokens: z.number(),
  completionTokens: z.number(),
  cachedInputTokens: z.number(),
  reasoningTokens: z.number(),
});
export type TokenUsage = z.infer<typeof TokenUsageSchema>;

/** What one run (one request) used: its model calls' tokens and their number. */
export const RunUsageSchema = TokenUsageSchema.extend({ stepCount: z.number().int() });
export type RunUsage = z.infer<typeof RunUsageSchema>;

export const CallModelInputSchema = z.object({
  agentId: z.string(),
  runId: z.string(),
  step: z.number().int(),
  allowedTools: z.array(z.string()),
  toolChoice: z.union([z.enum(['auto', 'required']), z.object({ name: z.string() })]),
  parallelToolCalls: z.boolean(),
  clientTools: z.array(ClientToolSchema),
  /** Tools whose calls wait for an answer (client tools, requires_approval rules). */
  approvalTools: z.array(z.string()),
  /** Tool calls of the previous step whose returns are to be stored as one tool message first. */
  pendingToolCallIds: z.array(z.string()),
  /** An approval whose follow-up user messages go after those returns. */
  followUpsFrom: z.string().optional(),
  /** What the request's earlier model calls used: a reply whose calls wait enters the pause with it. */
  requestUsage: RunUsageSchema,
  /** The request streams tokens: the reply's pieces are published as the provider streams them. */
  streamTokens: z.boolean().optional(),
  /**
   * A reply without tool calls ends the request: its run ends with it, in the transaction that stores
   * it (a plain step then needs no activity after its model call).
   */
  endsRunWhenFinal: z.boolean().optional(),
});
export type CallModelInput = z.infer<typeof CallModelInputSchema>;

/** A tool call of a model reply, as the step sees it: its id (ours) and its tool's name. */
export const StepCallSchema = z.object({ id: z.string(), name: z.string() });
export type StepCall = z.infer<typeof StepCallSchema>;

export const ApprovalWaitSchema = z.object({
  /** How long to wait before the pending calls are denied; null: for as long as it takes. */
  timeoutMs: z.number().nullable(),
});
export type ApprovalWait = z.infer<typeof ApprovalWaitSchema>;

export const ModelTurnSchema = z.object({
  messageId: z.string(),
  stepId: z.string(),
  toolCalls: z.array(StepCallSchema),
  finishReason: z.enum(['stop', 'tool_calls', 'length', 'other']),
  usage: TokenUsageSchema,
  /** Set when the reply's calls wait for an answer and the call entered the pause: the run has ended. */
  approvalWait: ApprovalWaitSchema.optional(),
  /** Set when the reply ended the run (`endsRunWhenFinal`): the stop reason it ended with. */
  stopReason: z.string().optional(),
});
export type ModelTurn = z.infer<typeof ModelTurnSchema>;

export const ToolCallInputSchema = z.object({
  agentId: z.string(),
  runId: z.string(),
  stepId: z.string(),
  messageId: z.string(),
  toolCallId: z.string(),
  toolName: z.string(),
  /** Arguments tool rules fix for this call; they override the model's. */
  prefilledArgs: z.record(z.string(), z.unknown()).optional(),
  /** The called tool, at the version the step resolved at its start. */
  toolId: z.string(),
  toolVersion: z.number().int(),
});
export type ToolCallInput = z.infer<typeof ToolCallInputSchema>;

export const ToolOutcomeSchema = z.object({
  status: z.enum(['success', 'error']),
  /** The return text when it is short (conditional tool rules read it); omitted otherwise. */
  output: z.string().optional(),
});
export type ToolOutcome = z.infer<typeof ToolOutcomeSchema>;

/** Longest tool output carried in workflow state for conditional rules. */
export const SHORT_OUTPUT_CHARS = 256;

export const RejectToolCallInputSchema = z.object({
  agentId: z.string(),
  runId: z.string(),
  toolCallId: z.string(),
  toolName: z.string(),
  /** The error text the model sees instead of a result. */
  reason: z.string(),
});
export type RejectToolCallInput = z.infer<typeof RejectToolCallInputSchema>;

/** Why a step ended in `error` or `llm_api_error`: Letta's `error_type` and a short message. */
export const AgentStepErrorSchema = z.object({ type: z.string(), message: z.string() });
export type AgentStepError = z.infer<typeof AgentStepErrorSchema>;

export const FinishRunInputSchema = z.object({
  agentId: z.string(),
  runId: z.string(),
  stopReason: z.string(),
  usage: RunUsageSchema,
  pendingToolCallIds: z.array(z.string()),
  followUpsFrom: z.string().optional(),
  /** Why the step failed, for `error` and `llm_api_error`. */
  error: AgentStepErrorSchema.optional(),
});
export type FinishRunInput = z.infer<typeof FinishRunInputSchema>;

export const EnterPauseInputSchema = z.object({
  agentId: z.string(),
  runId: z.string(),
  /** The assistant message whose tool calls wait. */
  messageId: z.string(),
  toolCallIds: z.array(z.string()),
  usage: RunUsageSchema,
});
export type EnterPauseInput = z.infer<typeof EnterPauseInputSchema>;

/** What the step does with an answer: the calls to run now (approved or never in question). */
export const ResumePlanSchema = z.object({
  messageId: z.string(),
  stepId: z.string(),
  /** Every call of the paused reply, in order: their returns make up one tool message. */
  callIds: z.array(z.string()),
  toRun: z.array(StepCallSchema),
  clientTools: z.array(ClientToolSchema),
  maxSteps: z.number().int(),
  streamTokens: z.boolean().optional(),
});
export type ResumePlan = z.infer<typeof ResumePlanSchema>;

export const AgentStepLimitsSchema = z.object({
  maxSteps: z.number().int(),
  modelTimeoutMs: z.number(),
  modelMaxAttempts: z.number().int(),
  modelRetryInitialMs: z.number(),
  toolTimeoutMs: z.number(),
  toolMaxAttempts: z.number().int(),
  /** A model or tool activity that stops heartbeating this long (its worker died) is retried. */
  heartbeatTimeoutMs: z.number(),
  /** How long an MCP tool call may take (unless the tool sets its own), and connecting to its server. */
  mcpCallTimeoutMs: z.number(),
  mcpConnectTimeoutMs: z.number(),
  /** How long a message to another agent may wait for its reply. */
  agentMessageTimeoutMs: z.number(),
  /**
   * Sandboxed, run_code and MCP calls run as local activities of the agent worker (LOCAL_TOOL_CALLS),
   * not on their modes' task queues.
   */
  localToolCalls: z.boolean().optional(),
  /** Model calls run as local activities of the agent worker (LOCAL_MODEL_CALLS). */
  localModelCalls: z.boolean().optional(),
  /** The step workflow's task timeout (STEP_TASK_TIMEOUT_MS); Temporal's default when unset. */
  taskTimeoutMs: z.number().optional(),
});
export type AgentStepLimits = z.infer<typeof AgentStepLimitsSchema>;

export const AgentStepInputSchema = z.object({
  agentId: z.string(),
  runId: z.string(),
  /** Where custom tools run (the `tools-sandbox` task queue, with its prefix). */
  sandboxTaskQueue: z.string(),
  /** Where MCP tools are called (the `tools-mcp` task queue, with its prefix). */
  mcpTaskQueue: z.string(),
  clientTools: z.array(ClientToolSchema),
  limits: AgentStepLimitsSchema,
  /** The request streams tokens (`stream_tokens`). */
  streamTokens: z.boolean().optional(),
  /** The agent's tools and rules, resolved by the API as it started the step. */
  context: StepContextSchema,
});
export type AgentStepInput = z.infer<typeof AgentStepInputSchema>;

export const AgentStepResultSchema = z.object({
  stopReason: z.string(),
  error: AgentStepErrorSchema.optional(),
  usage: RunUsageSchema,
});
export type AgentStepResult = z.infer<typeof AgentStepResultSchema>;

/** An answer to a paused step as the database records it. */
export const RecordedAnswerSchema = z.object({
  /** The run of the request that brought the answer; the step continues under it. */
  runId: z.string(),
  approvalMessageId: z.string(),
  /** The assistant message whose tool calls were waiting. */
  requestMessageId: z.string(),
  toolCallIds: z.array(z.string()),
});
export type RecordedAnswer = z.infer<typeof RecordedAnswerSchema>;

/**
 * The answer to a paused step, recorded in the database before the signal is sent: the signal carries
 * ids only (the tool returns live in the database), so the history shows which calls were answered.
 */
export const ApprovalAnsweredSchema = RecordedAnswerSchema.extend({
  /** The agent's tools and rules as the answer came, for the request it continues the step with. */
  context: StepContextSchema,
});
export type ApprovalAnswered = z.infer<typeof ApprovalAnsweredSchema>;

/** A step waiting in its agent's session for its turn. */
export const QueuedStepSchema = z.object({
  /** The step's own workflow, a child of the session. */
  workflowId: z.string(),
  input: AgentStepInputSchema,
  /** What the Temporal UI shows of it: a line in lists, and Markdown on its page. */
  summary: z.string(),
  details: z.string().optional(),
  /** How many steps may wait at most (AGENT_MAX_QUEUED_MESSAGES, as the API that sent it had it). */
  maxQueued: z.number().int(),
});
export type QueuedStep = z.infer<typeof QueuedStepSchema>;

export const AgentSessionInputSchema = z.object({
  agentId: z.string(),
  /** A session ends after this long without a message (the next one starts a new session). */
  idleMs: z.number(),
  /** Steps a session runs before it continues as new, to keep its history small. */
  maxStepsPerRun: z.number().int(),
  /**
   * How often a step waiting for its lane looks whether the step holding it is still alive
   * (AGENT_LANE_LOOK_MS); sessions started before lanes have none: 10 s.
   */
  laneLookMs: z.number().optional(),
  /** Steps still waiting, carried over when the session continued as new. */
  queue: z.array(QueuedStepSchema).optional(),
});
export type AgentSessionInput = z.infer<typeof AgentSessionInputSchema>;

/** One uploaded file's ingestion (workflows/file-ingestion.ts), with the limits it runs under. */
export const FileIngestionInputSchema = z.object({
  fileId: z.string(),
  /** What the Temporal UI names the file by. */
  fileName: z.string(),
  /** Tokens per chunk and of overlap (the folder's `embedding_chunk_size`, FILE_CHUNK_OVERLAP). */
  chunkSize: z.number().int().positive(),
  chunkOverlap: z.number().int().min(0),
  /** Chunks per embedding request: one activity each (EMBEDDING_BATCH_SIZE). */
  batchSize: z.number().int().positive(),
  parseTimeoutMs: z.number().int().positive(),
  embedTimeoutMs: z.number().int().positive(),
  embedMaxAttempts: z.number().int().positive(),
  embedRetryInitialMs: z.number().int().positive(),
  heartbeatTimeoutMs: z.number().int().positive(),
});
export type FileIngestionInput = z.infer<typeof FileIngestionInputSchema>;

/** A parsed file: how many chunks it has (their text stays in the database). */
export const ParsedFileSchema = z.object({ totalChunks: z.number().int().min(0) });
export type ParsedFile = z.infer<typeof ParsedFileSchema>;

/** One embedding batch: the chunks [start, end) of a file. */
export const EmbedBatchInputSchema = z.object({
  fileId: z.string(),
  start: z.number().int().min(0),
  end: z.number().int().min(0),
});
export type EmbedBatchInput = z.infer<typeof EmbedBatchInputSchema>;

export const FileIngestionResultSchema = z.object({
  status: z.enum(['completed', 'error', 'gone']),
  totalChunks: z.number().int().optional(),
  error: z.string().optional(),
});
export type FileIngestionResult = z.infer<typeof FileIngestionResultSchema>;

/**
 * What a webhook tells (src/agent/webhooks.ts): a run's end (its completion callback), or an approval
 * request made or expired (the approval webhook), by the run's or the request message's id.
 */
export const WebhookSubjectSchema = z.object({
  kind: z.enum(['run_callback', 'approval_requested', 'approval_expired']),
  id: z.string(),
  agentId: z.string(),
});
export type WebhookSubject = z.infer<typeof WebhookSubjectSchema>;

/** The delivery of a webhook: what it tells, and how hard to try. */
export const WebhookDeliverySchema = z.object({
  subject: WebhookSubjectSchema,
  maxAttempts: z.number().int(),
  initialRetryMs: z.number(),
  maxRetryMs: z.number(),
  /** One attempt, from the first lookup to the receiver's answer. */
  timeoutMs: z.number(),
});
export type WebhookDelivery = z.infer<typeof WebhookDeliverySchema>;
