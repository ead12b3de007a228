import { streamText } from 'ai';
import { createLetta } from '@letta-ai/vercel-ai-sdk-provider';
import { useAgentServer } from './helpers/agent-server';

/** Letta's Vercel AI SDK provider against this server: a turn's parts as the AI SDK streams them. */
describe('the Vercel AI SDK provider', () => {
  const h = useAgentServer('openai');

  it('streams the reply, and tool results that name their tool', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    h.stub.enqueue(
      { toolCalls: [{ name: 'conversation_search', arguments: { query: 'tea' } }] },
      { text: 'Nothing about tea yet.' },
    );
    const letta = createLetta({ baseUrl: h.server.url, token: 'unused' });
    const result = streamText({
      model: letta(),
      providerOptions: { letta: { agent: { id: agent.id } } },
      prompt: 'What do you know about tea?',
    });
    const parts: { type: string; toolName?: string; text?: string }[] = [];
    for await (const part of result.fullStream) parts.push(part as (typeof parts)[number]);
    const toolResult = parts.find((p) => p.type === 'tool-result');
    expect(toolResult?.toolName).toBe('conversation_search');
    expect(
      parts
        .filter((p) => p.type === 'text-delta')
        .map((p) => p.text)
        .join(''),
    ).toBe('Nothing about tea yet.');
  });
});
