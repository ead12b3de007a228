import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { useAgentServer } from './helpers/agent-server';
import {
  connectTemporalClient,
  scheduledActivities,
  turnWorkflowId,
  finishedTurnHistory,
} from './helpers/temporal';

/** A web server whose pages take `delayMs` to answer: a slow tool, for fetch_webpage. */
async function startSlowSite(delayMs: number) {
  const arrivals: { path: string; at: number }[] = [];
  const server = http.createServer((req, res) => {
    arrivals.push({ path: req.url ?? '', at: Date.now() });
    if (req.url === '/missing') return void res.writeHead(404).end('gone');
    if (req.url === '/huge')
      return void res.writeHead(200, { 'content-type': 'text/plain' }).end('y'.repeat(60_000));
    setTimeout(() => {
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(
          `<html><head><style>p{}</style></head><body><h1>Page ${req.url}</h1><p>Hello <b>world</b></p></body></html>`,
        );
    }, delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    arrivals,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('tool calls of one model reply', () => {
  // The site is on loopback, which fetch_webpage may reach only because the operator allows it.
  const h = useAgentServer('openai', { OUTBOUND_ALLOW_PRIVATE: '127.0.0.1' });
  const DELAY_MS = 2000;
  let site: Awaited<ReturnType<typeof startSlowSite>>;

  beforeAll(async () => {
    site = await startSlowSite(DELAY_MS);
  });
  afterAll(async () => {
    await site?.close();
  });

  const createAgent = (parallel: boolean) =>
    h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tools: ['fetch_webpage'],
      parallel_tool_calls: parallel,
    });

  const fetchTwoPages = (agentId: string) => {
    h.stub.enqueue(
      {
        toolCalls: [
          { name: 'fetch_webpage', arguments: { url: site.url('/one') } },
          { name: 'fetch_webpage', arguments: { url: site.url('/two') } },
        ],
      },
      { text: 'Read both.' },
    );
    return h.client.agents.messages.create(agentId, { messages: [{ role: 'user', content: 'Read them' }] });
  };

  it('run concurrently when every tool allows it: two slow tools take about the time of one', async () => {
    const agent = await createAgent(true);
    const before = site.arrivals.length;
    const started = Date.now();
    const response = await fetchTwoPages(agent.id);
    const elapsed = Date.now() - started;

    expect(response.stop_reason.stop_reason).toBe('end_turn');
    const [first, second] = site.arrivals.slice(before);
    expect(Math.abs(second.at - first.at)).toBeLessThan(DELAY_MS / 2);
    expect(elapsed).toBeGreaterThanOrEqual(DELAY_MS);
    expect(elapsed).toBeLessThan(2 * DELAY_MS);

    // All returns land in one tool message, in the calls' order.
    const returns = response.messages.filter((m) => m.message_type === 'tool_return_message');
    expect(returns).toHaveLength(1);
    const { tool_returns } = returns[0] as { tool_returns: { tool_return: string; status: string }[] };
    expect(tool_returns.map((r) => [r.status, r.tool_return])).toEqual([
      ['success', 'Page /one\n\nHello world'],
      ['success', 'Page /two\n\nHello world'],
    ]);

    // The history shows both activities scheduled by one workflow task, before either finished.
    const temporal = await connectTemporalClient();
    try {
      const events = await finishedTurnHistory(
        temporal.client,
        await turnWorkflowId(h.server.db, response.messages[0].run_id!),
      );
      const tools = scheduledActivities(events).filter((a) => a.type === 'runBuiltinTool');
      expect(tools).toHaveLength(2);
      expect(tools[1].eventId).toBe(tools[0].eventId + 1);
    } finally {
      await temporal.close();
    }
  });

  it('run one after the other when parallel tool calls are off', async () => {
    const agent = await createAgent(false);
    const before = site.arrivals.length;
    const response = await fetchTwoPages(agent.id);
    // Without parallel tool calls Letta keeps only the first call of the reply.
    expect(site.arrivals.slice(before).map((a) => a.path)).toEqual(['/one']);
    expect(h.stub.requests.at(-2)?.parallel_tool_calls).toBe(false);
    const returns = response.messages.filter((m) => m.message_type === 'tool_return_message');
    expect((returns[0] as { tool_returns: unknown[] }).tool_returns).toHaveLength(1);
  });

  it("turn a page's failure into an error return the model sees", async () => {
    const agent = await createAgent(false);
    h.stub.enqueue(
      { toolCalls: [{ name: 'fetch_webpage', arguments: { url: site.url('/missing') } }] },
      { text: 'That page is gone.' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Read it' }],
    });
    const ret = response.messages.find((m) => m.message_type === 'tool_return_message') as {
      status: string;
      tool_return: string;
    };
    expect(ret.status).toBe('error');
    expect(ret.tool_return).toBe('HTTP error 404: Not Found');
  });

  it("cuts a return longer than the tool's return_char_limit, with Letta's note", async () => {
    const agent = await createAgent(false);
    h.stub.enqueue(
      { toolCalls: [{ name: 'fetch_webpage', arguments: { url: site.url('/huge') } }] },
      { text: 'Long.' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Read it' }],
    });
    const ret = response.messages.find((m) => m.message_type === 'tool_return_message') as {
      tool_return: string;
    };
    expect(ret.tool_return).toBe(
      `${'y'.repeat(50_000)}... [NOTE: function output was truncated since it exceeded the character limit (60000 > 50000)]`,
    );
  });
});
