/**
 * What the agent-step workflow and its activities pass each other: ids and short summaries only.
 * Transcripts, tool arguments and tool returns stay in the database (small histories: the Temporal UI shows ids and summaries).
 */
import type { ToolRule } from '../src/schemas/tool-rules';

/** How a tool call is executed; it chooses the activity and its task queue. */
export type ToolMode = 'builtin' | 'sandbox' | 'mcp' | 'client';

export interface StepTool {
  id: string;
  name: string;
  mode: ToolMode;
  parallel: boolean;
  /** The version resolved at the step's start: the tool's activity runs that one (tool_versions). */
  version: number;
  /** The tool's own timeout (metadata.timeout_seconds), if it has one. */
  timeoutMs?: number;
  /** A built-in tool that works on the database alone: it runs as a local activity. */
  local?: boolean;
}

export interface ClientTool {
  name: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
}

export interface StepContext {
  tools: StepTool[];
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

export interface CallModelInput {
  agentId: string;
  runId: string;
  step: number;
  allowedTools: string[];
  toolChoice: 'auto' | 'required' | { name: string };
  parallelToolCalls: boolean;
  clientTools: ClientTool[];
  /** Tools whose calls wait for an answer (client tools, requires_approval rules). */
  approvalTools: string[];
  /** Tool calls of the previous step whose returns are to be stored as one tool message first. */
  pendingToolCallIds: string[];
  /** An approval whose follow-up user messages go after those returns. */
  followUpsFrom?: string;
  /** What the request's earlier model calls used: a reply whose calls wait enters the pause with it. */
  requestUsage: RunUsage;
}

/** A tool call of a model reply, as the step sees it: its id (ours) and its tool's name. */
export interface StepCall {
  id: string;
  name: string;
}

export interface ModelTurn {
  messageId: string;
  stepId: string;
  toolCalls: StepCall[];
  finishReason: 'stop' | 'tool_calls' | 'length' | 'other';
  usage: TokenUsage;
  /** Set when the reply's calls wait for an answer and the call entered the pause: the run has ended. */
  approvalWait?: ApprovalWait;
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
  /** The called tool, at the version the step resolved at its start. */
  toolId: string;
  toolVersion: number;
}

export interface ToolOutcome {
  status: 'success' | 'error';
  /** The return text when it is short (conditional tool rules read it); omitted otherwise. */
  output?: string;
}

export interface RejectToolCallInput {
  agentId: string;
  runId: string;
  toolCallId: string;
  toolName: string;
  /** The error text the model sees instead of a result. */
  reason: string;
}

/** What one run (one request) used: its model calls' tokens and their number. */
export type RunUsage = TokenUsage & { stepCount: number };

export const noUsage = (): RunUsage => ({
  promptTokens: 0,
  completionTokens: 0,
  cachedInputTokens: 0,
  reasoningTokens: 0,
  stepCount: 0,
});

/** `total` and one more model call. */
export const addUsage = (total: RunUsage, more: TokenUsage): RunUsage => ({
  promptTokens: total.promptTokens + more.promptTokens,
  completionTokens: total.completionTokens + more.completionTokens,
  cachedInputTokens: total.cachedInputTokens + more.cachedInputTokens,
  reasoningTokens: total.reasoningTokens + more.reasoningTokens,
  stepCount: total.stepCount + 1,
});

export interface FinishRunInput {
  agentId: string;
  runId: string;
  stopReason: string;
  usage: RunUsage;
  pendingToolCallIds: string[];
  followUpsFrom?: string;
  /** Why the step failed, for `error` and `llm_api_error`. */
  error?: { type: string; message: string };
}

/** Longest tool output carried in workflow state for conditional rules. */
export const SHORT_OUTPUT_CHARS = 256;

export interface EnterPauseInput {
  agentId: string;
  runId: string;
  /** The assistant message whose tool calls wait. */
  messageId: string;
  toolCallIds: string[];
  usage: RunUsage;
}

export interface ApprovalWait {
  /** How long to wait before the pending calls are denied; null: for as long as it takes. */
  timeoutMs: number | null;
}

/** What the step does with an answer: the calls to run now (approved or never in question). */
export interface ResumePlan {
  messageId: string;
  stepId: string;
  /** Every call of the paused reply, in order: their returns make up one tool message. */
  callIds: string[];
  toRun: StepCall[];
  clientTools: ClientTool[];
  maxSteps: number;
}
