import {
  argumentsText,
  nextStubId,
  startModelStub,
  tokensOf,
  type ModelStub,
  type ScriptedReply,
} from './model-stub';

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
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
}

export type OpenAiStub = ModelStub<ChatRequest>;

const USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

const toolCallsOf = (reply: ScriptedReply) =>
  (reply.toolCalls ?? []).map((call) => ({
    id: call.id ?? `call_${nextStubId()}`,
    type: 'function' as const,
    function: { name: call.name, arguments: argumentsText(call) },
  }));

function completion(request: ChatRequest, reply: ScriptedReply) {
  const toolCalls = toolCallsOf(reply);
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
          ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
      },
    ],
    usage: USAGE,
  };
}

/** The reply as chat completion chunks: reasoning, text and each call's arguments a few characters at a time. */
function completionChunks(request: ChatRequest, reply: ScriptedReply): string[] {
  const id = `chatcmpl-${nextStubId()}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: object, finish_reason: string | null = null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: request.model,
    choices: [{ index: 0, delta, finish_reason }],
  });
  const toolCalls = toolCallsOf(reply);
  const chunks: object[] = [
    chunk({ role: 'assistant', content: '' }),
    ...tokensOf(reply.reasoning ?? '').map((piece) => chunk({ reasoning_content: piece })),
    ...tokensOf(reply.text ?? '').map((piece) => chunk({ content: piece })),
    ...toolCalls.flatMap((call, index) => [
      chunk({
        tool_calls: [
          { index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } },
        ],
      }),
      ...tokensOf(call.function.arguments).map((piece) =>
        chunk({ tool_calls: [{ index, function: { arguments: piece } }] }),
      ),
    ]),
    chunk({}, toolCalls.length ? 'tool_calls' : 'stop'),
    ...(request.stream_options?.include_usage ? [{ ...chunk({}), choices: [], usage: USAGE }] : []),
  ];
  return [...chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`), 'data: [DONE]\n\n'];
}

/** How many numbers the stub's embeddings have. */
export const STUB_EMBEDDING_DIM = 256;

/**
 * A bag of words as a unit vector: texts that share words are near each other, so a search ranks the
 * passage about the query first, deterministically.
 */
export function stubEmbedding(text: string): number[] {
  const vector = new Array<number>(STUB_EMBEDDING_DIM).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let hash = 2166136261;
    for (const char of word) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619);
    vector[(hash >>> 0) % STUB_EMBEDDING_DIM] += 1;
  }
  const norm = Math.hypot(...vector) || 1;
  return vector.map((x) => x / norm);
}

/** The embeddings answer, as floats or as the SDK's default base64 of little-endian float32s. */
function embeddings(body: unknown) {
  const { input, model, encoding_format } = body as {
    input: string | string[];
    model: string;
    encoding_format?: string;
  };
  const data = [input].flat().map((text, index) => {
    const vector = stubEmbedding(text);
    const embedding =
      encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
    return { object: 'embedding', index, embedding };
  });
  return { object: 'list', data, model, usage: { prompt_tokens: 1, total_tokens: 1 } };
}

/** A local OpenAI-compatible chat completions server, with an embeddings endpoint. */
export const startOpenAiStub = (): Promise<OpenAiStub> =>
  startModelStub<ChatRequest>({
    path: '/chat/completions',
    baseURL: (origin) => `${origin}/v1`,
    success: completion,
    stream: completionChunks,
    instant: { path: '/embeddings', answer: embeddings },
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
