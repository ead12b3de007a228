/**
 * One worker keeps one connection per MCP server, which the calls of every run share. A call stopped
 * by its own run's cancel (or its worker's shutdown) leaves that connection to the others: another
 * run's call in flight on it ends with its tool's own return, its tool started once.
 */
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';
import { startCountingMcpServer } from './helpers/mcp-servers';

describe("an MCP call cancelled beside another run's", () => {
  const h = useAgentServer('openai');
  let mcp: Awaited<ReturnType<typeof startCountingMcpServer>>;
  beforeAll(async () => (mcp = await startCountingMcpServer()));
  afterAll(() => mcp.close());

  it("leaves the shared connection to the other run's call, which ends with its own return", async () => {
    const server = await h.client.mcpServers.create({
      server_name: 'counting',
      config: { mcp_server_type: 'streamable_http', server_url: mcp.url },
    });
    const slowWrite = (await h.client.mcpServers.tools.list(server.id!)).find(
      (t) => t.name === 'slow_write',
    )!;
    // Each turn calls slow_write once, then answers.
    h.stub.setDefault((request) =>
      request.messages.some((m) => m.role === 'tool')
        ? { text: 'done' }
        : { toolCalls: [{ name: 'slow_write', arguments: { ms: 3_000 } }] },
    );
    const agent = () => h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [slowWrite.id!] });
    const [cancelled, other] = await Promise.all([agent(), agent()]);
    const send = (agentId: string) =>
      h.client.agents.messages.createAsync(agentId, { messages: [{ role: 'user', content: 'Write' }] });
    await send(cancelled.id);
    const otherRun = await send(other.id);
    await eventually(
      async () => mcp.calls.length,
      (started) => started === 2,
    );
    await h.client.agents.messages.cancel(cancelled.id);

    const ended = await eventually(
      () => h.client.runs.retrieve(otherRun.id),
      (run) => run.status !== 'created' && run.status !== 'running',
      30_000,
    );
    expect(ended).toMatchObject({ status: 'completed', stop_reason: 'end_turn' });
    const returns = (await h.client.runs.messages.list(otherRun.id))
      .getPaginatedItems()
      .filter((m) => m.message_type === 'tool_return_message');
    expect(returns).toMatchObject([{ status: 'success', tool_return: 'slow_write done' }]);
    // Started once: the call was neither failed by the other's cancel nor taken over.
    const callId = (returns[0] as { tool_call_id: string }).tool_call_id;
    expect(mcp.calls.filter((call) => call.callId === callId)).toHaveLength(1);
  }, 60_000);
});
