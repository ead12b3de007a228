import type Letta from '@letta-ai/letta-client';
import { useAgentServer } from './helpers/agent-server';
import type { ScriptedReply } from './helpers/model-stub';
import { TokenChunks } from '../src/api/token-chunks';
import { lettaMessages } from '../src/api/letta-shapes';
import type { MessageRow } from '../src/db/rows';

interface Chunk {
  id?: string;
  message_type: string;
  seq_id?: number | null;
  content?: string;
  reasoning?: string;
  tool_call?: { name: string | null; arguments: string; tool_call_id: string };
}

/** Pieces of one message part: a message's id and type, and for calls the call's id. */
const pieceOf = (chunk: Chunk) =>
  `${chunk.id} ${chunk.message_type} ${chunk.tool_call?.tool_call_id ?? ''}`.trim();

/** The stream's chunks put together as a client does: one message part per id, type and call. */
function joined(chunks: Chunk[]) {
  const parts = new Map<string, { pieces: number; text: string; name: string | null }>();
  for (const chunk of chunks.filter((c) => c.id)) {
    const part = parts.get(pieceOf(chunk)) ?? { pieces: 0, text: '', name: null };
    part.pieces += 1;
    part.text += chunk.content ?? chunk.reasoning ?? chunk.tool_call?.arguments ?? '';
    part.name ??= chunk.tool_call?.name ?? null;
    parts.set(pieceOf(chunk), part);
  }
  return parts;
}

async function streamed(client: Letta, agentId: string, body: Record<string, unknown>): Promise<Chunk[]> {
  const stream = await client.agents.messages.create(agentId, {
    messages: [{ role: 'user', content: 'Go' }],
    streaming: true,
    ...body,
  });
  const chunks: Chunk[] = [];
  for await (const chunk of stream) chunks.push(chunk as Chunk);
  return chunks;
}

/** An agent's stored conversation, without what differs from one agent to the next. */
async function storedShapes(client: Letta, agentId: string) {
  const messages = (await client.agents.messages.list(agentId, { order: 'asc' })).getPaginatedItems();
  return messages
    .filter((m) => m.message_type !== 'system_message')
    .map((m) => {
      const { message_type, content, reasoning, tool_call } = m as Chunk & { content?: unknown };
      return { message_type, content, reasoning, tool: tool_call && [tool_call.name, tool_call.arguments] };
    });
}

const script: ScriptedReply[] = [
  {
    reasoning: 'The user wants a search, so I search the history first.',
    text: 'Let me look that up for you.',
    toolCalls: [{ name: 'conversation_search', arguments: { query: 'tea and biscuits' } }],
  },
  { text: 'Found nothing about tea, I am afraid, but I am happy to help anyway.' },
];

describe.each(['openai', 'anthropic'] as const)('stream_tokens through the %s SDK', (provider) => {
  const h = useAgentServer(provider);
  const createAgent = (extra: Record<string, unknown> = {}) =>
    h.client.agents.create({
      model: provider === 'openai' ? 'openai/gpt-4o-mini' : 'anthropic/claude-sonnet-4-6',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
      ...extra,
    });

  it("forwards the provider's deltas with stable ids, and stores what a whole reply stores", async () => {
    const agent = await createAgent();
    h.stub.enqueue(...script);
    const chunks = await streamed(h.client, agent.id, { stream_tokens: true });
    expect((h.stub.requests.at(-1) as { stream?: boolean }).stream).toBe(true);

    const parts = joined(chunks);
    const texts = [...parts.entries()].filter(([key]) => key.includes('assistant_message'));
    expect(texts.map(([, part]) => part.text)).toEqual([script[0].text, script[1].text]);
    for (const [, part] of texts) expect(part.pieces).toBeGreaterThan(1);
    const [reasoning] = [...parts.entries()].filter(([key]) => key.includes('reasoning_message'));
    expect(reasoning[1]).toMatchObject({ text: script[0].reasoning });
    expect(reasoning[1].pieces).toBeGreaterThan(1);
    const [call] = [...parts.entries()].filter(([key]) => key.includes('tool_call_message'));
    expect(call[1]).toMatchObject({ name: 'conversation_search' });
    expect(JSON.parse(call[1].text)).toEqual({ query: 'tea and biscuits' });
    expect(call[1].pieces).toBeGreaterThan(1);
    // The name comes with the call's first piece only, as Letta streams a ToolCallDelta.
    expect(
      chunks.filter((c) => c.message_type === 'tool_call_message').filter((c) => c.tool_call?.name),
    ).toHaveLength(1);
    // Every part's last chunk carries its place in the run, so a resumed stream starts after it.
    const seqIds = chunks.flatMap((c) => (c.seq_id ? [c.seq_id] : []));
    expect(new Set(seqIds).size).toBe(5);
    expect(chunks.map((c) => c.message_type).slice(-2)).toEqual(['stop_reason', 'usage_statistics']);

    const whole = await createAgent();
    h.stub.enqueue(...script);
    await streamed(h.client, whole.id, {});
    expect((h.stub.requests.at(-1) as { stream?: boolean }).stream).toBeFalsy();
    expect(await storedShapes(h.client, agent.id)).toEqual(await storedShapes(h.client, whole.id));
  });

  it('streams a call that waits for the client as pieces of its approval request', async () => {
    const agent = await createAgent();
    const lookup = {
      name: 'lookup_order',
      description: 'Looks an order up on the client.',
      parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
    };
    h.stub.enqueue({ toolCalls: [{ name: 'lookup_order', arguments: { order: 'A-1042-XYZ' } }] });
    const chunks = await streamed(h.client, agent.id, { stream_tokens: true, client_tools: [lookup] });
    const requests = chunks.filter((c) => c.message_type === 'approval_request_message');
    expect(requests.length).toBeGreaterThan(1);
    expect(new Set(requests.map((c) => c.tool_call!.tool_call_id)).size).toBe(1);
    expect(JSON.parse(requests.map((c) => c.tool_call!.arguments).join(''))).toEqual({ order: 'A-1042-XYZ' });
    const stop = chunks.find((c) => c.message_type === 'stop_reason') as { stop_reason?: string };
    expect(stop.stop_reason).toBe('requires_approval');
    const pending = (await h.client.agents.retrieve(agent.id, { include: ['agent.pending_approval'] }))
      .pending_approval as { tool_call?: { tool_call_id: string } } | null;
    expect(pending?.tool_call?.tool_call_id).toBe(requests[0].tool_call!.tool_call_id);
  });
});

describe('stream_tokens with an OpenAI-compatible server that does not stream', () => {
  const h = useAgentServer('openai');

  it('asks again without streaming, and sends the whole reply', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    h.stub.enqueue({ text: 'One piece only.', ignoresStream: true }, { text: 'One piece only.' });
    const chunks = await streamed(h.client, agent.id, { stream_tokens: true });
    expect(chunks.filter((c) => c.message_type === 'assistant_message').map((c) => c.content)).toEqual([
      'One piece only.',
    ]);
    expect(h.stub.requests.slice(-2).map((r) => Boolean((r as { stream?: boolean }).stream))).toEqual([
      true,
      false,
    ]);
  });
});

describe('what a token stream sends of a stored reply', () => {
  const row = {
    id: 'message-00000000-0000-4000-8000-000000000001',
    role: 'assistant',
    created_at: new Date(),
    run_id: 'run-1',
    step_id: 'step-1',
    content: [{ type: 'text', text: 'Hello there' }],
    reasoning: null,
    tool_calls: [{ id: 'call_1', name: 'lookup', arguments: '{"a":1}' }],
    metadata: {},
  } as unknown as MessageRow;
  const notice = (deltas: object[]) => ({
    run_id: 'run-1',
    message_id: row.id,
    step_id: 'step-1',
    deltas: deltas as never,
  });

  it('sends a reply none of whose pieces came as it is', () => {
    const tokens = new TokenChunks();
    const parts = lettaMessages(row);
    expect(parts.flatMap((part) => tokens.ofStored(part))).toEqual(parts);
  });

  it('sends only the rest of pieces that came in part, and drops pieces that come after the reply', () => {
    const tokens = new TokenChunks();
    const sent = tokens.ofNotice(
      notice([
        { part: 'text', text: 'Hel' },
        { part: 'tool_call', tool_call_id: 'call_1', name: 'lookup', arguments: '{"a"', approval: false },
      ]),
    );
    expect(sent.map((c) => c.otid)).toEqual(lettaMessages(row).map((part) => part.otid));
    const rest = lettaMessages(row).flatMap((part) => tokens.ofStored(part));
    expect(rest).toMatchObject([
      { message_type: 'assistant_message', content: 'lo there' },
      {
        message_type: 'tool_call_message',
        tool_call: { name: null, arguments: ':1}', tool_call_id: 'call_1' },
      },
    ]);
    expect(tokens.ofNotice(notice([{ part: 'text', text: 'late' }]))).toEqual([]);
  });
});
