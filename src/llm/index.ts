import type { LlmSettings } from './settings';
import { anthropicProvider } from './anthropic';
import { openAiProvider } from './openai';
import { ModelApiError, type ModelProvider } from './types';

export type ProviderName = 'openai' | 'anthropic';

/**
 * Letta's name for the models of an OpenAI-compatible endpoint other than OpenAI's (its
 * OpenAIProvider lists them so); here they are the `openai` provider's, whatever OPENAI_BASE_URL is.
 */
const PROVIDER_ALIASES: Record<string, string> = { 'openai-proxy': 'openai' };

/** `provider/model` → its parts; Letta requires the slash. */
export function parseHandle(handle: string): { provider: string; model: string } | undefined {
  const slash = handle.indexOf('/');
  if (slash <= 0 || slash === handle.length - 1) return undefined;
  const provider = handle.slice(0, slash);
  return { provider: PROVIDER_ALIASES[provider] ?? provider, model: handle.slice(slash + 1) };
}

/**
 * Why a provider cannot be used with this configuration, or undefined when it can. OpenAI-compatible
 * local servers (Ollama, vLLM…) need only OPENAI_BASE_URL.
 */
export function providerProblem(provider: string, config: LlmSettings): string | undefined {
  if (provider === 'openai') {
    return config.OPENAI_API_KEY || config.OPENAI_BASE_URL
      ? undefined
      : 'Provider openai is not configured: set OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server)';
  }
  if (provider === 'anthropic') {
    return config.ANTHROPIC_API_KEY
      ? undefined
      : 'Provider anthropic is not configured: set ANTHROPIC_API_KEY';
  }
  return `Unknown provider '${provider}': supported providers are openai and anthropic`;
}

export const PROVIDERS: ProviderName[] = ['openai', 'anthropic'];

/** The base URL a provider's requests go to, as Letta's `model_endpoint` shows it. */
export const providerEndpoint = (provider: string, config: LlmSettings) =>
  provider === 'openai'
    ? (config.OPENAI_BASE_URL ?? 'https://api.openai.com/v1')
    : (config.ANTHROPIC_BASE_URL ?? 'https://api.anthropic.com/v1');

/** One client per provider per process, built on first use. */
export function providerRegistry(config: LlmSettings): (provider: string) => ModelProvider {
  const cache = new Map<string, ModelProvider>();
  return (provider) => {
    const problem = providerProblem(provider, config);
    if (problem) throw new ModelApiError(problem, false);
    let client = cache.get(provider);
    if (!client) {
      const timeoutMs = config.MODEL_TIMEOUT_MS;
      client =
        provider === 'openai'
          ? openAiProvider({ apiKey: config.OPENAI_API_KEY, baseURL: config.OPENAI_BASE_URL, timeoutMs })
          : anthropicProvider({
              apiKey: config.ANTHROPIC_API_KEY,
              baseURL: config.ANTHROPIC_BASE_URL,
              timeoutMs,
            });
      cache.set(provider, client);
    }
    return client;
  };
}
