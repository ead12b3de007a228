import { argumentsText, nextStubId, startModelStub, type ModelStub, type ScriptedReply } from './model-stub';

/** What `@anthropic-ai/sdk` posts to `/v1/messages`, as far as tests read it. */
export interface AnthropicRequest {
  model: string;
  system?: string;
  max_tokens: number;
  messages: { role: 'user' | 'assistant'; content: { type: string; [key: string]: unknown }[] }[];
  tools?: { name: string; description?: string; input_schema: unknown }[];
  tool_choice?: { type: string; name?: string; disable_parallel_tool_use?: boolean };
}

export type AnthropicStub = ModelStub<AnthropicRequest>;

function message(request: AnthropicRequest, reply: ScriptedReply) {
  const toolUses = (reply.toolCalls ?? []).map((call) => ({
    type: 'tool_use',
    id: call.id ?? `toolu_${nextStubId()}`,
    name: call.name,
    input: JSON.parse(argumentsText(call)),
  }));
  return {
    id: `msg_${nextStubId()}`,
    type: 'message',
    role: 'assistant',
    model: request.model,
    content: [...(reply.text ? [{ type: 'text', text: reply.text }] : []), ...toolUses],
    stop_reason: toolUses.length ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: 7 },
  };
}

/** A local server that speaks Anthropic's Messages API. */
export const startAnthropicStub = (): Promise<AnthropicStub> =>
  startModelStub<AnthropicRequest>({
    path: '/v1/messages',
    baseURL: (origin) => origin,
    success: message,
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
