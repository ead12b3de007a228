/**
 * The agent-step workflow's input and result. Shared with the API, which starts the workflow and reads
 * its result; sandbox-safe (types only).
 */
import type { ClientTool } from '../activities/contracts';

export interface AgentStepLimits {
  maxSteps: number;
  modelTimeoutMs: number;
  modelMaxAttempts: number;
  modelRetryInitialMs: number;
  toolTimeoutMs: number;
  toolMaxAttempts: number;
}

export interface AgentStepInput {
  agentId: string;
  runId: string;
  clientTools: ClientTool[];
  limits: AgentStepLimits;
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
