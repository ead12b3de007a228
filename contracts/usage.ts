/** Token usage as a request adds it up, model call by model call (sandbox-safe: pure functions). */
import type { RunUsage, TokenUsage } from './payloads';

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
