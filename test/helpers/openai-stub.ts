import { argumentsText, nextStubId, startModelStub, type ModelStub, type ScriptedReply } from './model-stub';

export type { StubReply, StubToolCall } from './model-stub';

/** What the `openai` SDK posts to `/chat/completions`, as far as tests read it. */
export interface ChatRequest {
  model: string;
  messages: { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }[];
  tools?: {
    type: 'function';
    function: { name: string; description?: string; parameters: unknown; strict?: boolean };
  }[];
  tool_choice?: unknown;
  parallel_tool_calls?: boolean;
}

export type OpenAiStub = ModelStub<ChatRequest>;

function completion(request: ChatRequest, reply: ScriptedReply) {
  const toolCalls = (reply.toolCalls ?? []).map((call) => ({
    id: call.id ?? `call_${nextStubId()}`,
    type: 'function',
    function: { name: call.name, arguments: argumentsText(call) },
  }));
  return {
    id: `chatcmpl-${nextStubId()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.text ?? null,
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
      },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  };
}

/** A local OpenAI-compatible chat completions server. */
export const startOpenAiStub = (): Promise<OpenAiStub> =>
  startModelStub<ChatRequest>({
    path: '/chat/completions',
    baseURL: (origin) => `${origin}/v1`,
    success: completion,
    error: (status) => ({ error: { message: `stub error ${status}`, type: 'server_error' } }),
    models: {
      path: '/models',
      body: {
        object: 'list',
        data: ['gpt-4o-mini', 'local-llama', 'text-embedding-3-small'].map((id) => ({
          id,
          object: 'model',
          created: 1_700_000_000,
          owned_by: 'stub',
        })),
      },
    },
  });
