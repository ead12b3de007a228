import { useAgentServer } from './helpers/agent-server';

type Order = 'asc' | 'desc';

/** Every item of an auto-paginated listing, as the official client walks it. */
async function walk<T>(pages: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of pages) items.push(item);
  return items;
}

/**
 * Lists page as Letta pages: `after` / `before` relative to the requested order, so the official
 * client's auto-pagination visits every item exactly once, in order, either way.
 */
describe('paging', () => {
  const h = useAgentServer('openai');

  it.each<Order>(['asc', 'desc'])('visits every message of an agent once, %s', async (order) => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    for (const text of ['one', 'two', 'three', 'four']) {
      h.stub.enqueue({ text: `re: ${text}` });
      await h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: text }] });
    }
    const everything = await walk(h.client.agents.messages.list(agent.id, { limit: 1000, order: 'asc' }));
    expect(everything).toHaveLength(9);
    const walked = await walk(h.client.agents.messages.list(agent.id, { limit: 2, order }));
    const expected = order === 'asc' ? everything : [...everything].reverse();
    expect(walked.map((m) => m.id)).toEqual(expected.map((m) => m.id));
    // The default order is Letta's: newest first.
    const [newest] = (await h.client.agents.messages.list(agent.id, { limit: 1 })).getPaginatedItems();
    expect(newest.id).toBe(everything.at(-1)!.id);
  });

  it.each<Order>(['asc', 'desc'])('visits every agent and every tool once, %s', async (order) => {
    const agents = await Promise.all(
      [0, 1, 2].map(() => h.client.agents.create({ model: 'openai/gpt-4o-mini' })),
    );
    const all = await walk(h.client.agents.list({ limit: 1000, order: 'asc' }));
    const walkedAgents = await walk(h.client.agents.list({ limit: 2, order }));
    expect(walkedAgents.map((a) => a.id)).toEqual(
      (order === 'asc' ? all : [...all].reverse()).map((a) => a.id),
    );
    expect(walkedAgents.map((a) => a.id)).toEqual(expect.arrayContaining(agents.map((a) => a.id)));

    const tools = await walk(h.client.tools.list({ limit: 1000, order: 'asc' }));
    const walkedTools = await walk(h.client.tools.list({ limit: 3, order }));
    expect(walkedTools.map((t) => t.id)).toEqual(
      (order === 'asc' ? tools : [...tools].reverse()).map((t) => t.id),
    );
    expect(new Set(walkedTools.map((t) => t.id)).size).toBe(walkedTools.length);
  });

  it('pages backwards with before, the items nearest the cursor first', async () => {
    const all = await walk(h.client.tools.list({ limit: 1000, order: 'asc' }));
    const last = all.at(-1)!;
    const page = (await h.client.tools.list({ limit: 2, order: 'asc', before: last.id })).getPaginatedItems();
    expect(page.map((t) => t.id)).toEqual(all.slice(-3, -1).map((t) => t.id));
    const backwards = await walk(h.client.tools.list({ limit: 2, order: 'asc', before: last.id }));
    expect(new Set(backwards.map((t) => t.id))).toEqual(new Set(all.slice(0, -1).map((t) => t.id)));
  });
});
