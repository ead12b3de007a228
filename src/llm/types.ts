/** Provider-neutral shapes: what the model activity hands a provider and gets back. */
import type { ReturnPart } from '../returns/return-parts';

export interface ToolCall {
  id: string;
  name: string;
  /** The raw JSON text the model produced. */
  arguments: string;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCall[] }
  | {
      role: 'tool';
      toolCallId: string;
      /** The return's text: all of it for a model whose API takes no image in a tool's result. */
      content: string;
      /** The return as parts, when it holds an image: for an API that takes them. */
      parts?: ReturnPart[];
    };

export interface FunctionSchema {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
  strict?: boolean;
}

export interface ModelRequest {
  model: string;
  messages: ChatMessage[];
  tools: FunctionSchema[];
  /** `required`: some tool must be called; `{name}`: that one. */
  toolChoice?: 'auto' | 'required' | { name: string };
  parallelToolCalls: boolean;
  temperature?: number;
  maxTokens?: number;
  /** How hard a reasoning model thinks (OpenAI's reasoning_effort). */
  reasoningEffort?: string;
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  cachedInputTokens?: number;
  reasoningTokens?: number;
}

export interface ModelReply {
  text: string | null;
  reasoning: string | null;
  toolCalls: ToolCall[];
  finishReason: 'stop' | 'tool_calls' | 'length' | 'other';
  usage: Usage;
}

/**
 * A piece of a reply as the provider streams it: reasoning or text, or part of a tool call (`index` is
 * the call's place in the reply; its name comes with its first piece).
 */
export type ModelDelta =
  | { kind: 'reasoning' | 'text'; text: string }
  | { kind: 'tool_call'; index: number; name?: string; arguments: string };

export interface ModelProvider {
  /**
   * The model's reply. With `onDelta`, the reply is streamed from the provider and each piece handed on
   * as it arrives; the reply returned is the same as without.
   */
  complete(
    request: ModelRequest,
    signal?: AbortSignal,
    onDelta?: (delta: ModelDelta) => void,
  ): Promise<ModelReply>;
  /** The ids of the models the endpoint serves (its `/models` list). */
  listModels(): Promise<string[]>;
  /** One embedding per text, in order; absent for a provider without an embeddings API. */
  embed?(model: string, texts: string[], signal?: AbortSignal): Promise<number[][]>;
}

/**
 * A provider's refusal or failure. `retryable` errors (rate limits, 5xx, timeouts, dropped connections)
 * are left to the activity's retry policy; the others (authentication, invalid request) end the run
 * at once with stop reason `llm_api_error`.
 */
export class ModelApiError extends Error {
  override name = 'ModelApiError';
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** Letta's `error_type` for a provider failure, as its stream's `event: error` names it. */
export function llmErrorType(error: ModelApiError): string {
  if (error.status === 401 || error.status === 403) return 'llm_authentication';
  if (error.status === 429) return 'llm_rate_limit';
  if (error.status === 402) return 'llm_insufficient_credits';
  if (error.status === 400 || error.status === 422) return 'llm_bad_request';
  if (error.status === 408 || /timed? ?out/i.test(error.message)) return 'llm_timeout';
  return 'llm_error';
}

/** HTTP statuses worth another try: request timeout, conflict, rate limit, and server errors. */
export const isRetryableStatus = (status: number | undefined) =>
  status === undefined || status === 408 || status === 409 || status === 429 || status >= 500;
