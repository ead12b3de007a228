import {
  argumentsText,
  nextStubId,
  startModelStub,
  tokensOf,
  type ModelStub,
  type ScriptedReply,
} from './model-stub';

/** What `@anthropic-ai/sdk` posts to `/v1/messages`, as far as tests read it. */
export interface AnthropicRequest {
  model: string;
  system?: string;
  max_tokens: number;
  messages: { role: 'user' | 'assistant'; content: { type: string; [key: string]: unknown }[] }[];
  tools?: { name: string; description?: string; input_schema: unknown }[];
  tool_choice?: { type: string; name?: string; disable_parallel_tool_use?: boolean };
  stream?: boolean;
}

export type AnthropicStub = ModelStub<AnthropicRequest>;

type ContentBlock =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown };

function contentOf(reply: ScriptedReply): ContentBlock[] {
  return [
    ...(reply.reasoning
      ? [{ type: 'thinking' as const, thinking: reply.reasoning, signature: 'stub-signature' }]
      : []),
    ...(reply.text ? [{ type: 'text' as const, text: reply.text }] : []),
    ...(reply.toolCalls ?? []).map((call) => ({
      type: 'tool_use' as const,
      id: call.id ?? `toolu_${nextStubId()}`,
      name: call.name,
      input: JSON.parse(argumentsText(call)),
    })),
  ];
}

function message(request: AnthropicRequest, reply: ScriptedReply, content = contentOf(reply)) {
  return {
    id: `msg_${nextStubId()}`,
    type: 'message',
    role: 'assistant',
    model: request.model,
    content,
    stop_reason: content.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: 7 },
  };
}

type StreamEvent = { type: string } & Record<string, unknown>;

/** A content block's streamed events: its start, its pieces a few characters at a time, its stop. */
function blockEvents(block: ContentBlock, index: number): StreamEvent[] {
  const pieces =
    block.type === 'thinking'
      ? [
          ...tokensOf(block.thinking).map((thinking) => ({ type: 'thinking_delta', thinking })),
          { type: 'signature_delta', signature: block.signature },
        ]
      : block.type === 'text'
        ? tokensOf(block.text).map((text) => ({ type: 'text_delta', text }))
        : tokensOf(JSON.stringify(block.input)).map((partial_json) => ({
            type: 'input_json_delta',
            partial_json,
          }));
  const start =
    block.type === 'thinking'
      ? { ...block, thinking: '', signature: '' }
      : block.type === 'text'
        ? { ...block, text: '' }
        : { ...block, input: {} };
  return [
    { type: 'content_block_start', index, content_block: start },
    ...pieces.map((delta) => ({ type: 'content_block_delta', index, delta })),
    { type: 'content_block_stop', index },
  ];
}

/** The reply as Anthropic's streaming events. */
function messageEvents(request: AnthropicRequest, reply: ScriptedReply): string[] {
  const whole = message(request, reply);
  const events: StreamEvent[] = [
    {
      type: 'message_start',
      message: { ...whole, content: [], stop_reason: null, usage: { input_tokens: 12, output_tokens: 0 } },
    },
    ...whole.content.flatMap(blockEvents),
    {
      type: 'message_delta',
      delta: { stop_reason: whole.stop_reason, stop_sequence: null },
      usage: { output_tokens: 7 },
    },
    { type: 'message_stop' },
  ];
  return events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
}

/** A local server that speaks Anthropic's Messages API. */
export const startAnthropicStub = (): Promise<AnthropicStub> =>
  startModelStub<AnthropicRequest>({
    path: '/v1/messages',
    baseURL: (origin) => origin,
    success: (request, reply) => message(request, reply),
    stream: messageEvents,
    error: (status) => ({ type: 'error', error: { type: 'api_error', message: `stub error ${status}` } }),
    models: {
      path: '/v1/models',
      body: {
        data: [
          {
            type: 'model',
            id: 'claude-sonnet-4-5',
            display_name: 'Claude Sonnet 4.5',
            created_at: '2025-09-29T00:00:00Z',
          },
        ],
        has_more: false,
        first_id: 'claude-sonnet-4-5',
        last_id: 'claude-sonnet-4-5',
      },
    },
  });
