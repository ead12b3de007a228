import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server that speaks OpenAI's chat completions wire protocol, so the real `openai` SDK and
 * our real provider code run against it. Tests script its replies and read the requests it got.
 */
export interface StubToolCall {
  name: string;
  arguments?: Record<string, unknown> | string;
  id?: string;
}

export type StubReply =
  | { text: string; toolCalls?: StubToolCall[]; delayMs?: number }
  | { toolCalls: StubToolCall[]; text?: string; delayMs?: number }
  | { status: number; body?: unknown };

export interface ChatRequest {
  model: string;
  messages: { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }[];
  tools?: { type: 'function'; function: { name: string; description?: string; parameters: unknown } }[];
  tool_choice?: unknown;
  parallel_tool_calls?: boolean;
}

export interface OpenAiStub {
  baseURL: string;
  requests: ChatRequest[];
  /** Replies in order; a function decides from the request. When none are left: a plain "ok". */
  enqueue(...replies: (StubReply | ((request: ChatRequest) => StubReply))[]): void;
  /** Used whenever the queue is empty. */
  setDefault(reply: (request: ChatRequest) => StubReply): void;
  close(): Promise<void>;
}

let callCounter = 0;

function completion(request: ChatRequest, reply: Exclude<StubReply, { status: number }>) {
  const toolCalls = (reply.toolCalls ?? []).map((call) => ({
    id: call.id ?? `call_${(++callCounter).toString().padStart(6, '0')}`,
    type: 'function',
    function: {
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
    },
  }));
  return {
    id: `chatcmpl-${++callCounter}`,
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

export async function startOpenAiStub(): Promise<OpenAiStub> {
  const requests: ChatRequest[] = [];
  const queue: (StubReply | ((request: ChatRequest) => StubReply))[] = [];
  let fallback: (request: ChatRequest) => StubReply = () => ({ text: 'ok' });
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', async () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'not found' } }));
        return;
      }
      const request = JSON.parse(raw) as ChatRequest;
      requests.push(request);
      const next = queue.shift() ?? fallback;
      const reply = typeof next === 'function' ? next(request) : next;
      if ('status' in reply) {
        res
          .writeHead(reply.status, { 'content-type': 'application/json' })
          .end(
            JSON.stringify(
              reply.body ?? { error: { message: `stub error ${reply.status}`, type: 'server_error' } },
            ),
          );
        return;
      }
      if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
      if (!res.writableEnded && !res.destroyed) {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(completion(request, reply)));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...replies) => queue.push(...replies),
    setDefault: (reply) => (fallback = reply),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
