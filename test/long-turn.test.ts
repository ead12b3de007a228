import { useAgentServer } from './helpers/agent-server';
import { continueAsNewChain, turnWorkflowId } from './helpers/temporal';

/**
 * A letta-code session's turn: one message, then client-tool calls answered one by one, the client
 * sending its 20 tools (80 KB of descriptions) with every request, streamed, through the official
 * client. The turn's history stays small (the schemas are stored once, the answers carry digests) and
 * continues as new every 1,000 events, so its thousandth cycle costs what its first did.
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

  /** How many client-tool calls the model makes in each agent's turn, then it ends the turn. */
  const callsLeft = new Map<string, number>();
  beforeAll(() =>
    h.stub.setDefault((request) => {
      h.stub.requests.length = 0; // the stub keeps what it got: a thousand transcripts are too many
      const agentId = /AGENT_ID: (agent-[\w-]+)/.exec(String(request.messages[0].content))![1];
      const left = callsLeft.get(agentId)!;
      callsLeft.set(agentId, left - 1);
      if (left === 0) return { text: 'All done.' };
      const tool = CLIENT_TOOLS[left % CLIENT_TOOLS.length];
      return { toolCalls: [{ name: tool.name, arguments: { command: `step ${left}` } }] };
    }),
  );

  /**
   * A letta-code session whose turn calls a client tool `cycles` times: `start` sends its message,
   * `cycle` answers the paused call as letta-code does (streamed, its client tools with every request)
   * and returns how long the turn took to pause again, or to end.
   */
  async function codingSession(cycles: number) {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const conversation = await h.client.conversations.create({ agent_id: agent.id });
    callsLeft.set(agent.id, cycles);
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
    let chunks: Chunk[] = [];
    const stopReason = () => chunks.find((c) => c.message_type === 'stop_reason')?.stop_reason;
    return {
      async start(): Promise<string> {
        chunks = await send([{ role: 'user', content: 'Refactor the project.' }]);
        return (chunks.find((c) => 'run_id' in c) as { run_id: string }).run_id;
      },
      async cycle(): Promise<number> {
        expect(stopReason()).toBe('requires_approval');
        const call = [...chunks]
          .reverse()
          .find((c) => c.message_type === 'approval_request_message')!.tool_call!;
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
        return performance.now() - started;
      },
      stopReason,
    };
  }

  it(`answers ${CYCLES} client-tool cycles of 80 KB of tools with a bounded history, its last as fast as a first`, async () => {
    expect(JSON.stringify(CLIENT_TOOLS.map((t) => t.description)).length).toBeGreaterThan(80_000);
    const long = await codingSession(CYCLES);
    const firstRunId = await long.start();
    // A fresh session's first 100 cycles, each right after one of the long turn's last 100: the two
    // are compared under the same load of the machine.
    const window = Math.min(100, CYCLES);
    const fresh = await codingSession(window);
    const longMs: number[] = [];
    const freshMs: number[] = [];
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      if (cycle === CYCLES - window + 1) await fresh.start();
      longMs.push(await long.cycle());
      if (cycle > CYCLES - window) freshMs.push(await fresh.cycle());
    }
    expect([long.stopReason(), fresh.stopReason()]).toEqual(['end_turn', 'end_turn']);

    const workflowId = await turnWorkflowId(h.server.db, firstRunId);
    await h.server.turns.temporal.workflow.getHandle(workflowId).result();
    const chain = await continueAsNewChain(h.server.turns.temporal, workflowId);
    const totalBytes = chain.reduce((sum, run) => sum + run.bytes, 0);
    const first = median(longMs.slice(0, window));
    const last = median(longMs.slice(-window));
    const alongside = median(freshMs);
    console.log(
      JSON.stringify({
        cycles: CYCLES,
        runs: chain.length,
        largestHistoryBytes: Math.max(...chain.map((r) => r.bytes)),
        largestHistoryEvents: Math.max(...chain.map((r) => r.events.length)),
        bytesPerCycle: Math.round(totalBytes / CYCLES),
        p50FirstMs: Math.round(first),
        p50LastMs: Math.round(last),
        p50FreshAlongsideLastMs: Math.round(alongside),
      }),
    );
    // Each run continues as new past TURN_HISTORY_MAX_EVENTS (1,000), at the next model call or pause.
    expect(chain.length).toBeGreaterThan(1);
    expect(Math.max(...chain.map((r) => r.events.length))).toBeLessThan(1_100);
    expect(Math.max(...chain.map((r) => r.bytes))).toBeLessThan(10 * 1024 * 1024);
    expect(totalBytes / CYCLES).toBeLessThan(8 * 1024);
    expect(last).toBeLessThan(alongside * 1.25);
  }, 1_800_000);
});
