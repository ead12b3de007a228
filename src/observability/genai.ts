/**
 * A model call's span, by OpenTelemetry's GenAI semantic conventions: provider, model, token usage and
 * finish reason; the messages and the reply only when content capture is on. The conventions'
 * attribute names are still incubating, so they are spelled here, as OpenTelemetry advises.
 */
import { SpanKind } from '@opentelemetry/api';
import type { ModelProvider, ModelReply, ModelRequest } from '../llm/types';
import { withIds } from '../context-ids';
import { capturesContent, inSpan } from './tracing';

export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  system: 'gen_ai.system',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  maxTokens: 'gen_ai.request.max_tokens',
  temperature: 'gen_ai.request.temperature',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cachedInputTokens: 'gen_ai.usage.cache_read_input_tokens',
  reasoningTokens: 'gen_ai.usage.reasoning_output_tokens',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  toolName: 'gen_ai.tool.name',
} as const;

/** Which provider a model call goes to, and the step it is the model call of. */
export interface ModelCallFacts {
  name: string;
  stepId: string;
}

/** The provider with each completion in its span, filed under its step; usage and finish reason noted. */
export function tracedProvider(provider: ModelProvider, facts: ModelCallFacts): ModelProvider {
  return {
    ...provider,
    complete: (request, signal, onDelta) =>
      traceModelCall(facts, request, () => provider.complete(request, signal, onDelta)),
  };
}

function traceModelCall(
  facts: ModelCallFacts,
  request: ModelRequest,
  call: () => Promise<ModelReply>,
): Promise<ModelReply> {
  const attributes = {
    [GEN_AI.operation]: 'chat',
    [GEN_AI.system]: facts.name,
    [GEN_AI.provider]: facts.name,
    [GEN_AI.requestModel]: request.model,
    ...(request.maxTokens !== undefined ? { [GEN_AI.maxTokens]: request.maxTokens } : {}),
    ...(request.temperature !== undefined ? { [GEN_AI.temperature]: request.temperature } : {}),
    ...(capturesContent() ? { [GEN_AI.inputMessages]: JSON.stringify(request.messages) } : {}),
  };
  return withIds({ stepId: facts.stepId }, () =>
    inSpan(
      `chat ${request.model}`,
      attributes,
      async (span) => {
        const reply = await call();
        span.setAttributes({
          [GEN_AI.inputTokens]: reply.usage.promptTokens,
          [GEN_AI.outputTokens]: reply.usage.completionTokens,
          [GEN_AI.cachedInputTokens]: reply.usage.cachedInputTokens ?? 0,
          [GEN_AI.reasoningTokens]: reply.usage.reasoningTokens ?? 0,
          [GEN_AI.finishReasons]: [reply.finishReason],
          ...(capturesContent()
            ? { [GEN_AI.outputMessages]: JSON.stringify({ text: reply.text, tool_calls: reply.toolCalls }) }
            : {}),
        });
        return reply;
      },
      SpanKind.CLIENT,
    ),
  );
}

/** An MCP server's tool call, in its span (the MCP conventions' `tools/call {tool}`); no arguments. */
export const traceMcpCall = <T>(serverId: string, toolName: string, call: () => Promise<T>): Promise<T> =>
  inSpan(
    `tools/call ${toolName}`,
    {
      'mcp.method.name': 'tools/call',
      [GEN_AI.operation]: 'execute_tool',
      [GEN_AI.toolName]: toolName,
      'letta.mcp_server.id': serverId,
    },
    call,
    SpanKind.CLIENT,
  );

/** A custom tool's run in its sandbox, in its span; no arguments, no environment. */
export const traceSandboxRun = <T>(toolName: string, run: () => Promise<T>): Promise<T> =>
  inSpan(`sandbox run ${toolName}`, { [GEN_AI.operation]: 'execute_tool', [GEN_AI.toolName]: toolName }, run);
