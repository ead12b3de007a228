import Anthropic from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import type { ReturnPart } from '../returns/return-parts';
import {
  isRetryableStatus,
  ModelApiError,
  type ChatMessage,
  type ModelDelta,
  type ModelProvider,
  type ModelReply,
  type ModelRequest,
} from './types';

const DEFAULT_MAX_TOKENS = 4096;

/** Anthropic's messages API. */
export function anthropicProvider(options: {
  apiKey?: string;
  baseURL?: string;
  timeoutMs: number;
}): ModelProvider {
  const client = new Anthropic({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    maxRetries: 0,
    timeout: options.timeoutMs,
  });
  return {
    async complete(request, signal, onDelta) {
      try {
        if (!onDelta) return fromAnthropic(await client.messages.create(toAnthropic(request), { signal }));
        const stream = client.messages.stream(toAnthropic(request), { signal });
        stream.on('streamEvent', deltaForwarder(onDelta));
        return fromAnthropic(await stream.finalMessage());
      } catch (error) {
        if (error instanceof Anthropic.APIError) {
          throw new ModelApiError(
            `Anthropic API error ${error.status ?? ''}: ${error.message}`,
            isRetryableStatus(error.status),
            error.status,
          );
        }
        throw new ModelApiError(`Anthropic request failed: ${(error as Error).message}`, true);
      }
    },
    async listModels() {
      const ids: string[] = [];
      for await (const model of client.models.list()) ids.push(model.id);
      return ids;
    },
  };
}

function toAnthropic(request: ModelRequest): MessageCreateParamsNonStreaming {
  const system = request.messages
    .filter((m): m is Extract<ChatMessage, { role: 'system' }> => m.role === 'system')
    .map((m) => m.content)
    .join('\n\n');
  const choice = request.toolChoice;
  const disable_parallel_tool_use = !request.parallelToolCalls;
  return {
    model: request.model,
    max_tokens: request.maxTokens ?? DEFAULT_MAX_TOKENS,
    ...(system ? { system } : {}),
    messages: mergeSameRole(request.messages.filter((m) => m.role !== 'system').map(toAnthropicMessage)),
    ...(request.tools.length
      ? {
          tools: request.tools.map((tool) => ({
            name: tool.name,
            description: tool.description,
            input_schema: tool.parameters as Anthropic.Tool.InputSchema,
          })),
          tool_choice:
            typeof choice === 'object'
              ? { type: 'tool', name: choice.name, disable_parallel_tool_use }
              : choice === 'required'
                ? { type: 'any', disable_parallel_tool_use }
                : { type: 'auto', disable_parallel_tool_use },
        }
      : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
  };
}

function toAnthropicMessage(message: Exclude<ChatMessage, { role: 'system' }>): MessageParam {
  switch (message.role) {
    case 'user':
      return { role: 'user', content: [{ type: 'text', text: message.content }] };
    case 'tool':
      return {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: message.toolCallId,
            // Anthropic refuses an empty text block.
            content: message.parts
              ? message.parts.filter((part) => part.type !== 'text' || part.text).map(toolResultBlock)
              : message.content,
          },
        ],
      };
    case 'assistant':
      return {
        role: 'assistant',
        content: [
          ...(message.content ? [{ type: 'text' as const, text: message.content }] : []),
          ...(message.toolCalls ?? []).map((call) => ({
            type: 'tool_use' as const,
            id: call.id,
            name: call.name,
            input: parseArguments(call.arguments),
          })),
        ],
      };
  }
}

/** A return part as a block of a tool result: images as Letta sends them (base64 image blocks). */
function toolResultBlock(part: ReturnPart): Anthropic.TextBlockParam | Anthropic.ImageBlockParam {
  if (part.type === 'text') return { type: 'text', text: part.text };
  const { media_type, data } = part.source;
  return {
    type: 'image',
    source: { type: 'base64', media_type: media_type as Anthropic.Base64ImageSource['media_type'], data },
  };
}

/** Anthropic wants user and assistant turns to alternate: parallel tool results share one user turn. */
function mergeSameRole(messages: MessageParam[]): MessageParam[] {
  const merged: MessageParam[] = [];
  for (const message of messages) {
    const previous = merged[merged.length - 1];
    if (previous?.role === message.role) {
      previous.content = [
        ...(previous.content as unknown[]),
        ...(message.content as unknown[]),
      ] as MessageParam['content'];
    } else {
      merged.push({ ...message });
    }
  }
  return merged;
}

function parseArguments(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text);
    return value && typeof value === 'object' ? value : {};
  } catch {
    return {};
  }
}

/** Hands on a streamed message's text, thinking and tool-input pieces; tool calls counted in order. */
function deltaForwarder(onDelta: (delta: ModelDelta) => void) {
  const callOfBlock = new Map<number, number>();
  return (event: Anthropic.MessageStreamEvent) => {
    if (event.type === 'content_block_start' && event.content_block.type === 'tool_use') {
      const index = callOfBlock.size;
      callOfBlock.set(event.index, index);
      onDelta({ kind: 'tool_call', index, name: event.content_block.name, arguments: '' });
    }
    if (event.type !== 'content_block_delta') return;
    const { delta } = event;
    if (delta.type === 'text_delta') onDelta({ kind: 'text', text: delta.text });
    else if (delta.type === 'thinking_delta') onDelta({ kind: 'reasoning', text: delta.thinking });
    else if (delta.type === 'input_json_delta') {
      const index = callOfBlock.get(event.index);
      if (index !== undefined) onDelta({ kind: 'tool_call', index, arguments: delta.partial_json });
    }
  };
}

function fromAnthropic(message: Anthropic.Message): ModelReply {
  const text = message.content
    .filter((block): block is Anthropic.TextBlock => block.type === 'text')
    .map((block) => block.text)
    .join('');
  const reasoning = message.content
    .filter((block): block is Anthropic.ThinkingBlock => block.type === 'thinking')
    .map((block) => block.thinking)
    .join('');
  return {
    text: text || null,
    reasoning: reasoning || null,
    toolCalls: message.content
      .filter((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')
      .map((block) => ({ id: block.id, name: block.name, arguments: JSON.stringify(block.input ?? {}) })),
    finishReason:
      message.stop_reason === 'tool_use'
        ? 'tool_calls'
        : message.stop_reason === 'max_tokens'
          ? 'length'
          : message.stop_reason === 'end_turn'
            ? 'stop'
            : 'other',
    usage: {
      promptTokens: message.usage.input_tokens,
      completionTokens: message.usage.output_tokens,
      cachedInputTokens: message.usage.cache_read_input_tokens ?? 0,
    },
  };
}
