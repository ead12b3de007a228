/** The models' settings: the providers' keys and endpoints, the default embedding, model calls' limits. */
import { z } from 'zod';
import { milliseconds, optional, url, wholeNumber } from '../settings-fields';

export const llmSettings = z
  .object({
    OPENAI_API_KEY: optional(z.string()).describe('key for `openai/<model>` models'),
    OPENAI_BASE_URL: optional(url).meta({
      description: 'any OpenAI-compatible endpoint (Ollama, vLLM, LM Studio, llama.cpp server)',
      shownDefault: 'OpenAI',
    }),
    ANTHROPIC_API_KEY: optional(z.string()).describe('key for `anthropic/<model>` models'),
    ANTHROPIC_BASE_URL: optional(url).meta({
      description: "another endpoint that speaks Anthropic's Messages API",
      shownDefault: 'Anthropic',
    }),
    LETTA_DEFAULT_EMBEDDING_HANDLE: optional(
      z
        .string()
        .regex(/^[^/]+\/.+$/, 'expected an embedding model handle, e.g. openai/text-embedding-3-small'),
    ).describe(
      "embedding model (`provider/model`) of agents, archives and folders created without `embedding` or `embedding_config` (Letta's setting of the same name); unset: such agents and archives keep their passages' text alone, found by the words of a search, and such a folder is a 400",
    ),
    MODEL_TIMEOUT_MS: milliseconds
      .default(120_000)
      .describe("longest one model call may take (the activity's start-to-close timeout adds 10 s)"),
    MODEL_MAX_ATTEMPTS: wholeNumber
      .min(1)
      .default(5)
      .describe('attempts of a model call on rate limits, 5xx and dropped connections (backoff ×2)'),
    MODEL_RETRY_INITIAL_MS: milliseconds
      .default(1_000)
      .describe('first backoff interval of those retries (at most 60 s between attempts)'),
    MODEL_TRANSCRIPT_CACHE_MESSAGES: wholeNumber
      .min(0)
      .default(50_000)
      .describe(
        "messages of agents' transcripts a worker keeps between model calls, so that a step reads only the messages since the last (`0`: every step reads the whole transcript; see [A model call's transcript](design.md#a-model-calls-transcript))",
      ),
  })
  .meta({
    title: 'Models',
    description:
      "The model providers' keys and endpoints, the default embedding model, and how long and how often a model call may run.",
  });

export type LlmSettings = z.infer<typeof llmSettings>;
