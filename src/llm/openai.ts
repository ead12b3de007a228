import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import {
  isRetryableStatus,
  ModelApiError,
  type ChatMessage,
  type ModelDelta,
  type ModelProvider,
  type ModelReply,
  type ModelRequest,
} from './types';

/** OpenAI's chat completions API, and every server that speaks it (OPENAI_BASE_URL). */
export function openAiProvider(options: {
  apiKey?: string;
  baseURL?: string;
  timeoutMs: number;
}): ModelProvider {
  // Retries belong to the activity's retry policy, where the Temporal UI shows them.
  const client = new OpenAI({
    apiKey: options.apiKey ?? 'not-needed',
    baseURL: options.baseURL,
    maxRetries: 0,
    timeout: options.timeoutMs,
  });
  return {
    async complete(request, signal, onDelta) {
      try {
        if (!onDelta) return fromOpenAi(await client.chat.completions.create(toOpenAi(request), { signal }));
        const chunks = await client.chat.completions.create(
          { ...toOpenAi(request), stream: true, stream_options: { include_usage: true } },
          { signal },
        );
        const completion = completionAccumulator();
        let seen = 0;
        for await (const chunk of chunks) seen += completion.add(chunk, onDelta);
        // A server that ignores `stream` answers one JSON body, which reads as no chunks: ask it again so.
        if (!seen) return fromOpenAi(await client.chat.completions.create(toOpenAi(request), { signal }));
        return fromOpenAi(completion.result());
      } catch (error) {
        throw asModelApiError(error);
      }
    },
    async listModels() {
      const ids: string[] = [];
      for await (const model of client.models.list()) ids.push(model.id);
      return ids;
    },
    async embed(model, texts, signal) {
      try {
        const { data } = await client.embeddings.create({ model, input: texts }, { signal });
        return [...data].sort((a, b) => a.index - b.index).map((item) => item.embedding);
      } catch (error) {
        throw asModelApiError(error);
      }
    },
  };
}

function toOpenAi(request: ModelRequest): OpenAI.Chat.ChatCompletionCreateParamsNonStreaming {
  const tools: ChatCompletionTool[] = request.tools.map((tool) => ({
    type: 'function',
    function: {
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      ...(tool.strict ? { strict: true } : {}),
    },
  }));
  const choice = request.toolChoice;
  return {
    model: request.model,
    messages: request.messages.map(toOpenAiMessage),
    ...(tools.length
      ? {
          tools,
          tool_choice:
            typeof choice === 'object'
              ? { type: 'function', function: { name: choice.name } }
              : (choice ?? 'auto'),
          parallel_tool_calls: request.parallelToolCalls,
        }
      : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.maxTokens !== undefined ? { max_completion_tokens: request.maxTokens } : {}),
    ...(request.reasoningEffort
      ? {
          reasoning_effort:
            request.reasoningEffort as OpenAI.Chat.ChatCompletionCreateParams['reasoning_effort'],
        }
      : {}),
  };
}

type StreamedMessage = OpenAI.Chat.ChatCompletionMessage & { reasoning_content?: string };

/**
 * Builds a streamed reply's completion from its chunks, handing on each piece: text, reasoning
 * (`reasoning_content`, as DeepSeek, vLLM and llama.cpp stream it) and tool calls by index.
 */
function completionAccumulator() {
  let text = '';
  let reasoning = '';
  const calls: { id: string; name: string; arguments: string }[] = [];
  let finishReason: OpenAI.Chat.ChatCompletion.Choice['finish_reason'] = 'stop';
  let usage: OpenAI.CompletionUsage | undefined;
  return {
    /** Takes one chunk; 1 when it was one (0 for anything else the stream held). */
    add(chunk: OpenAI.Chat.ChatCompletionChunk, onDelta: (delta: ModelDelta) => void): number {
      if (!Array.isArray(chunk?.choices) && !chunk?.usage) return 0;
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices?.[0];
      if (!choice) return 1;
      if (choice.finish_reason) finishReason = choice.finish_reason;
      const delta = choice.delta as OpenAI.Chat.ChatCompletionChunk.Choice.Delta & {
        reasoning_content?: string;
      };
      if (delta.reasoning_content) {
        reasoning += delta.reasoning_content;
        onDelta({ kind: 'reasoning', text: delta.reasoning_content });
      }
      if (delta.content) {
        text += delta.content;
        onDelta({ kind: 'text', text: delta.content });
      }
      for (const piece of delta.tool_calls ?? []) {
        const call = (calls[piece.index] ??= { id: '', name: '', arguments: '' });
        call.id ||= piece.id ?? '';
        call.name += piece.function?.name ?? '';
        call.arguments += piece.function?.arguments ?? '';
        onDelta({
          kind: 'tool_call',
          index: piece.index,
          ...(piece.function?.name ? { name: piece.function.name } : {}),
          arguments: piece.function?.arguments ?? '',
        });
      }
      return 1;
    },
    result(): OpenAI.Chat.ChatCompletion {
      const message: StreamedMessage = {
        role: 'assistant',
        content: text || null,
        refusal: null,
        ...(reasoning ? { reasoning_content: reasoning } : {}),
        ...(calls.length
          ? {
              tool_calls: calls.filter(Boolean).map(({ id, name, arguments: args }) => ({
                id,
                type: 'function' as const,
                function: { name, arguments: args },
              })),
            }
          : {}),
      };
      return {
        id: '',
        object: 'chat.completion',
        created: 0,
        model: '',
        choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
        usage,
      };
    },
  };
}

function toOpenAiMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.toolCalls?.length
          ? {
              tool_calls: message.toolCalls.map((call) => ({
                id: call.id,
                type: 'function' as const,
                function: { name: call.name, arguments: call.arguments },
              })),
            }
          : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    default:
      return message;
  }
}

function fromOpenAi(completion: OpenAI.Chat.ChatCompletion): ModelReply {
  const choice = completion.choices?.[0];
  if (!choice) throw new ModelApiError('the model returned no choices', true);
  const message = choice.message;
  const reasoning = (message as { reasoning_content?: string }).reasoning_content ?? null;
  return {
    text: message.content || null,
    reasoning,
    toolCalls: (message.tool_calls ?? [])
      .filter((call) => call.type === 'function')
      .map((call) => ({ id: call.id, name: call.function.name, arguments: call.function.arguments || '{}' })),
    finishReason:
      choice.finish_reason === 'stop' ||
      choice.finish_reason === 'tool_calls' ||
      choice.finish_reason === 'length'
        ? choice.finish_reason
        : 'other',
    usage: {
      promptTokens: completion.usage?.prompt_tokens ?? 0,
      completionTokens: completion.usage?.completion_tokens ?? 0,
      cachedInputTokens: completion.usage?.prompt_tokens_details?.cached_tokens ?? 0,
      reasoningTokens: completion.usage?.completion_tokens_details?.reasoning_tokens ?? 0,
    },
  };
}

function asModelApiError(error: unknown): ModelApiError {
  if (error instanceof ModelApiError) return error;
  if (error instanceof OpenAI.APIError) {
    return new ModelApiError(
      `OpenAI API error ${error.status ?? ''}: ${error.message}`.trim(),
      isRetryableStatus(error.status),
      error.status,
    );
  }
  return new ModelApiError(
    `OpenAI request failed: ${error instanceof Error ? error.message : String(error)}`,
    true,
  );
}
