import type { Request, Response } from 'express';
/**
 * `GET /v1/models/` and `GET /v1/models/embedding`: the models the configured providers serve, as
 * Letta lists them (routers/v1/llms.py), context windows included. Clients such as letta-code read
 * them before they create an agent.
 */
import { z } from 'zod';
import type { ApiContext } from '../context';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { EmbeddingModelSchema, ModelSchema, type EmbeddingModel, type Model } from '../schemas/models';
import { DEFAULT_TEMPERATURE, defaultContextWindow, defaultMaxOutputTokens } from '../../agent/defaults';
import { PROVIDERS, providerEndpoint, providerProblem, providerRegistry } from '../../llm';
import { errorText } from '../../temporal/connection';
import { embeddingConfigOf } from '../../memory/embeddings';

const isEmbeddingModel = (id: string) => /embed/i.test(id);

export function modelsRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Models');
  const on = routeTable(router, modelsContext(ctx));
  on.get('/v1/models', listLlmModelsDoc, listLlmModels);
  on.get('/v1/models/embedding', listEmbeddingModelsDoc, listEmbeddingModels);

  return router;
}

/** What the routes of modelsRouter share. */
function modelsContext(ctx: ApiContext) {
  const providers = providerRegistry(ctx.config);

  /** Each configured provider's model ids; one that cannot be listed now is left out, with a warning. */
  async function servedModels(): Promise<{ provider: string; id: string }[]> {
    const configured = PROVIDERS.filter((provider) => !providerProblem(provider, ctx.config));
    const lists = await Promise.all(
      configured.map(async (provider) => {
        try {
          return (await providers(provider).listModels()).map((id) => ({ provider, id }));
        } catch (error) {
          ctx.log.warn({ provider, error: errorText(error) }, 'could not list the models of a provider');
          return [];
        }
      }),
    );
    return lists.flat();
  }
  return { ctx, providers, servedModels };
}

type ModelsContext = ReturnType<typeof modelsContext>;

const listLlmModelsDoc: RouteDoc = { summary: 'List LLM models', response: z.array(ModelSchema) };

async function listLlmModels({ ctx, servedModels }: ModelsContext, _req: Request, res: Response) {
  const models = (await servedModels()).filter(({ id }) => !isEmbeddingModel(id));
  res.json(
    models.map(({ provider, id }) => llmModelShape(provider, id, providerEndpoint(provider, ctx.config))),
  );
}

const listEmbeddingModelsDoc: RouteDoc = {
  summary: 'List embedding models',
  response: z.array(EmbeddingModelSchema),
};

async function listEmbeddingModels({ ctx, servedModels }: ModelsContext, _req: Request, res: Response) {
  const models = (await servedModels()).filter(({ id }) => isEmbeddingModel(id));
  res.json(
    models.map(({ provider, id }): EmbeddingModel => ({
      ...names(provider, id),
      model_type: 'embedding',
      ...embeddingConfigOf(provider, id, ctx.config),
    })),
  );
}

const names = (provider: string, id: string) => ({
  handle: `${provider}/${id}`,
  name: id,
  display_name: id,
  provider_type: provider,
  provider_name: provider,
  provider_category: 'base' as const,
});

/** Letta's `Model`: the llm_config an agent of this handle gets, and the model's names. */
function llmModelShape(provider: string, id: string, endpoint: string): Model {
  const contextWindow = defaultContextWindow(provider, id);
  return {
    ...names(provider, id),
    model_type: 'llm',
    model: id,
    model_endpoint_type: provider,
    model_endpoint: endpoint,
    model_wrapper: null,
    context_window: contextWindow,
    max_context_window: contextWindow,
    put_inner_thoughts_in_kwargs: false,
    temperature: DEFAULT_TEMPERATURE,
    max_tokens: defaultMaxOutputTokens(`${provider}/${id}`),
    enable_reasoner: false,
    reasoning_effort: null,
    max_reasoning_tokens: 0,
    frequency_penalty: null,
    compatibility_type: null,
    verbosity: null,
    tier: null,
    parallel_tool_calls: false,
    response_format: null,
    strict: false,
  };
}
