/**
 * The agent session's and the agent-step workflow's inputs, results, signal and updates. Shared with the
 * API, which sends them; sandbox-safe (types and definitions only).
 */
import { defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ClientTool, StepContext } from '../activities/contracts';

export interface AgentStepLimits {
  maxSteps: number;
  modelTimeoutMs: number;
  modelMaxAttempts: number;
  modelRetryInitialMs: number;
  toolTimeoutMs: number;
  toolMaxAttempts: number;
  /** A model or tool activity that stops heartbeating this long (its worker died) is retried. */
  heartbeatTimeoutMs: number;
  /** How long an MCP tool call may take (unless the tool sets its own), and connecting to its server. */
  mcpCallTimeoutMs: number;
  mcpConnectTimeoutMs: number;
}

export interface AgentStepInput {
  agentId: string;
  runId: string;
  /** Where custom tools run (the `tools-sandbox` task queue, with its prefix). */
  sandboxTaskQueue: string;
  /** Where MCP tools are called (the `tools-mcp` task queue, with its prefix). */
  mcpTaskQueue: string;
  clientTools: ClientTool[];
  limits: AgentStepLimits;
  /** The agent's tools and rules, resolved by the API as it started the step. */
  context: StepContext;
}

/** Why a step ended in `error` or `llm_api_error`: Letta's `error_type` and a short message. */
export interface AgentStepError {
  type: string;
  message: string;
}

export interface AgentStepResult {
  stopReason: string;
  error?: AgentStepError;
  usage: {
    promptTokens: number;
    completionTokens: number;
    cachedInputTokens: number;
    reasoningTokens: number;
    stepCount: number;
  };
}

/**
 * The answer to a paused step, recorded in the database before the signal is sent: the signal carries
 * ids only (the tool returns live in the database), so the history shows which calls were answered.
 */
export interface ApprovalAnswered extends RecordedAnswer {
  /** The agent's tools and rules as the answer came, for the request it continues the step with. */
  context: StepContext;
}

/** An answer as the database records it. */
export interface RecordedAnswer {
  /** The run of the request that brought the answer; the step continues under it. */
  runId: string;
  approvalMessageId: string;
  /** The assistant message whose tool calls were waiting. */
  requestMessageId: string;
  toolCallIds: string[];
}

export const approvalAnsweredSignal = defineSignal<[ApprovalAnswered]>('approvalAnswered');

/** A step waiting in its agent's session for its turn. */
export interface QueuedStep {
  /** The step's own workflow, a child of the session. */
  workflowId: string;
  input: AgentStepInput;
  /** What the Temporal UI shows of it. */
  summary: string;
  /** How many steps may wait at most (AGENT_MAX_QUEUED_MESSAGES, as the API that sent it had it). */
  maxQueued: number;
}

export interface AgentSessionInput {
  agentId: string;
  /** A session ends after this long without a message (the next one starts a new session). */
  idleMs: number;
  /** Steps a session runs before it continues as new, to keep its history small. */
  maxStepsPerRun: number;
  /** Steps still waiting, carried over when the session continued as new. */
  queue?: QueuedStep[];
}

/** A new message: its step waits for its turn. Refused when the queue is full. */
export const enqueueStepUpdate = defineUpdate<{ queued: number }, [QueuedStep]>('enqueueStep');

/**
 * Cancels the steps of these workflows (all, when none are named): queued ones never run, the running
 * one is cancelled. Completes once they have ended.
 */
export const cancelStepsUpdate = defineUpdate<{ cancelled: string[] }, [{ workflowIds?: string[] }]>(
  'cancelSteps',
);
