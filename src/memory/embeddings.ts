/**
 * Embeddings for archival memory: Letta's EmbeddingConfig from a handle (`openai/text-embedding-3-small`),
 * and the vectors of texts from the config's provider, scaled to unit length (cosine is then a dot
 * product, src/db/archives.ts).
 */
import type { LlmSettings } from '../llm/settings';
import { invalid } from '../errors';
import { parseHandle, providerEndpoint } from '../llm';
import type { ModelProvider } from '../llm/types';

/** Embedding models' dimensions; one not listed is taken to have OpenAI's smaller size. */
const EMBEDDING_DIMENSIONS: Record<string, number> = {
  'text-embedding-3-large': 3072,
  'text-embedding-3-small': 1536,
  'text-embedding-ada-002': 1536,
};

export interface EmbeddingConfig {
  embedding_endpoint_type: string;
  embedding_endpoint: string | null;
  embedding_model: string;
  embedding_dim: number;
  embedding_chunk_size: number;
  batch_size: number;
  handle: string;
  [key: string]: unknown;
}

/** Letta's config of an embedding model its provider serves. */
export function embeddingConfigOf(provider: string, model: string, config: LlmSettings): EmbeddingConfig {
  return {
    embedding_endpoint_type: provider,
    embedding_endpoint: providerEndpoint(provider, config),
    embedding_model: model,
    embedding_dim: EMBEDDING_DIMENSIONS[model] ?? 1536,
    embedding_chunk_size: 300,
    batch_size: 32,
    handle: `${provider}/${model}`,
  };
}

/** The config an `embedding` handle names; 400 for one that names no provider. */
export function embeddingConfigForHandle(handle: string, config: LlmSettings): EmbeddingConfig {
  const parsed = parseHandle(handle);
  if (!parsed) throw invalid(`Invalid embedding handle '${handle}': expected '<provider>/<model>'`);
  return embeddingConfigOf(parsed.provider, parsed.model, config);
}

/**
 * The embedding config of a new agent, archive or folder, as Letta picks it: the config given, else
 * the handle given, else the server's default (LETTA_DEFAULT_EMBEDDING_HANDLE); null without any.
 */
export function chosenEmbedding(
  body: { embedding?: string | null; embedding_config?: Record<string, unknown> | null },
  config: LlmSettings,
): Record<string, unknown> | null {
  if (body.embedding_config) return body.embedding_config;
  const handle = body.embedding ?? config.LETTA_DEFAULT_EMBEDDING_HANDLE;
  return handle ? embeddingConfigForHandle(handle, config) : null;
}

/** What is asked of an agent's embedding config to use it. */
function usableEmbedding(config: Record<string, unknown> | null, what: string) {
  const model = config?.embedding_model;
  const provider = config?.embedding_endpoint_type;
  if (typeof model !== 'string' || typeof provider !== 'string')
    throw invalid(
      `${what} has no embedding model: create it with 'embedding' (e.g. 'openai/text-embedding-3-small')`,
    );
  return { provider, model };
}

const unit = (vector: number[]) => {
  const norm = Math.hypot(...vector) || 1;
  return vector.map((x) => x / norm);
};

/** The unit vectors of `texts` from the config's provider. */
export async function embedTexts(
  providers: (provider: string) => ModelProvider,
  embeddingConfig: Record<string, unknown> | null,
  texts: string[],
  what: string,
  signal?: AbortSignal,
): Promise<number[][]> {
  const { provider, model } = usableEmbedding(embeddingConfig, what);
  let client: ModelProvider;
  try {
    client = providers(provider);
  } catch (error) {
    throw invalid(`${what} cannot embed with ${provider}: ${(error as Error).message}`);
  }
  if (!client.embed)
    throw invalid(`The ${provider} provider serves no embeddings: choose another embedding model`);
  return (await client.embed(model, texts, signal)).map(unit);
}
