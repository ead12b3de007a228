import { useAgentServer } from './helpers/agent-server';
import { continueAsNewChain, turnWorkflowId } from './helpers/temporal';

/**
 * A letta-code session's turn: one message, then client-tool calls answered one by one, the client
 * sending its 20 tools (80 KB of descriptions) with every request, streamed, through the official
 * client. The turn's history stays small (the schemas are stored once, the answers carry digests) and
 * continues as new when Temporal suggests it, so its thousandth cycle costs what its first did.
 */

const CYCLES = Number(process.env.LONG_TURN_CYCLES ?? 1_000);

/** 20 tools of 4 KB of description each: what letta-code sends with every request. */
const CLIENT_TOOLS = Array.from({ length: 20 }, (_, i) => ({
  name: `client_tool_${i}`,
  description: `Tool ${i} of the client. ${'It does what the coding agent asks of the machine it runs on. '.repeat(65)}`,
  parameters: {
    type: 'object',
    properties: { command: { type: 'string', description: 'What to do' } },
    required: ['command'],
  },
}));

interface Chunk {
  message_type: string;
  stop_reason?: string;
  tool_call?: { tool_call_id: string; name: string };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

describe('a turn of any length', () => {
  const h = useAgentServer('openai');

  it(`answers ${CYCLES} client-tool cycles of 80 KB of tools with a bounded history, as fast at the end as at the start`, async () => {
    expect(JSON.stringify(CLIENT_TOOLS.map((t) => t.description)).length).toBeGreaterThan(80_000);
    let modelCalls = 0;
    h.stub.setDefault(() => {
      h.stub.requests.length = 0; // the stub keeps what it got: a thousand transcripts are too many
      modelCalls += 1;
      if (modelCalls > CYCLES) return { text: 'All done.' };
      const tool = CLIENT_TOOLS[modelCalls % CLIENT_TOOLS.length];
      return { toolCalls: [{ name: tool.name, arguments: { command: `step ${modelCalls}` } }] };
    });
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const conversation = await h.client.conversations.create({ agent_id: agent.id });

    /** One request as letta-code sends it: streamed, with its client tools; the chunks it got. */
    const send = async (messages: unknown[]) => {
      const stream = await h.client.conversations.messages.create(conversation.id, {
        messages: messages as never,
        client_tools: CLIENT_TOOLS,
        stream_tokens: true,
      });
      const chunks: Chunk[] = [];
      for await (const chunk of stream) chunks.push(chunk as Chunk);
      return chunks;
    };
    const pausedCall = (chunks: Chunk[]) => {
      expect(chunks.find((c) => c.message_type === 'stop_reason')?.stop_reason).toBe('requires_approval');
      return [...chunks].reverse().find((c) => c.message_type === 'approval_request_message')!.tool_call!;
    };

    let chunks = await send([{ role: 'user', content: 'Refactor the project.' }]);
    const firstRunId = (chunks.find((c) => 'run_id' in c) as { run_id: string }).run_id;
    const cycleMs: number[] = [];
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      const call = pausedCall(chunks);
      const started = performance.now();
      chunks = await send([
        {
          type: 'approval',
          approvals: [
            {
              type: 'tool',
              tool_call_id: call.tool_call_id,
              tool_return: `ran ${call.name}`,
              status: 'success',
            },
          ],
        },
      ]);
      cycleMs.push(performance.now() - started);
    }
    expect(chunks.find((c) => c.message_type === 'stop_reason')?.stop_reason).toBe('end_turn');

    const workflowId = await turnWorkflowId(h.server.db, firstRunId);
    await h.server.turns.temporal.workflow.getHandle(workflowId).result();
    const chain = await continueAsNewChain(h.server.turns.temporal, workflowId);
    const totalBytes = chain.reduce((sum, run) => sum + run.bytes, 0);
    const first100 = median(cycleMs.slice(0, 100));
    const last100 = median(cycleMs.slice(-100));
    console.log(
      JSON.stringify({
        cycles: CYCLES,
        runs: chain.length,
        largestHistoryBytes: Math.max(...chain.map((r) => r.bytes)),
        largestHistoryEvents: Math.max(...chain.map((r) => r.events.length)),
        bytesPerCycle: Math.round(totalBytes / CYCLES),
        p50FirstMs: Math.round(first100),
        p50LastMs: Math.round(last100),
      }),
    );
    // Temporal's default suggestion (4,096 events or 4 MiB) comes every few hundred cycles.
    expect(chain.length).toBeGreaterThan(1);
    expect(Math.max(...chain.map((r) => r.bytes))).toBeLessThan(10 * 1024 * 1024);
    expect(totalBytes / CYCLES).toBeLessThan(8 * 1024);
    expect(last100).toBeLessThan(first100 * 1.25);
  }, 1_800_000);
});
