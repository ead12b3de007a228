/** What `GET /v1/models/` and `GET /v1/models/embedding` answer (src/api/routes/models.ts). */
import { z } from 'zod';

/** The names every listed model carries. */
const modelNames = {
  /** `<provider>/<model>`, as `model` / `embedding` of an agent's create take it. */
  handle: z.string(),
  name: z.string(),
  display_name: z.string(),
  provider_type: z.string(),
  provider_name: z.string(),
  provider_category: z.literal('base'),
};

/** Letta's Model: the llm_config an agent of this handle gets, and the model's names. */
export const ModelSchema = z
  .object({
    ...modelNames,
    model_type: z.literal('llm'),
    model: z.string(),
    model_endpoint_type: z.string(),
    model_endpoint: z.string(),
    model_wrapper: z.null(),
    context_window: z.number().int(),
    max_context_window: z.number().int(),
    put_inner_thoughts_in_kwargs: z.boolean(),
    temperature: z.number(),
    max_tokens: z.number().nullable(),
    enable_reasoner: z.boolean(),
    reasoning_effort: z.null(),
    max_reasoning_tokens: z.number().int(),
    frequency_penalty: z.null(),
    compatibility_type: z.null(),
    verbosity: z.null(),
    tier: z.null(),
    parallel_tool_calls: z.boolean(),
    response_format: z.null(),
    strict: z.boolean(),
  })
  .meta({ id: 'Model' });
export type Model = z.infer<typeof ModelSchema>;

/** Letta's EmbeddingModel: the embedding config of this handle, and the model's names. */
export const EmbeddingModelSchema = z
  .object({
    ...modelNames,
    model_type: z.literal('embedding'),
    embedding_endpoint_type: z.string(),
    embedding_endpoint: z.string().nullable(),
    embedding_model: z.string(),
    embedding_dim: z.number().int(),
    embedding_chunk_size: z.number().int(),
    batch_size: z.number().int(),
  })
  .meta({ id: 'EmbeddingModel' });
export type EmbeddingModel = z.infer<typeof EmbeddingModelSchema>;
