import { useAgentServer } from './helpers/agent-server';

/** Letta's blocks API through the official client: one block, seen and edited by every agent it is on. */
describe('blocks', () => {
  const h = useAgentServer('openai');

  it('are created, listed, retrieved, updated and deleted', async () => {
    const block = await h.client.blocks.create({ label: 'policy', value: 'Be brief.', description: 'rules' });
    expect(block).toMatchObject({ label: 'policy', value: 'Be brief.', limit: expect.any(Number) });
    expect((await h.client.blocks.list({ label: 'policy' })).getPaginatedItems().map((b) => b.id)).toContain(
      block.id,
    );
    expect(await h.client.blocks.update(block.id, { value: 'Be kind.' })).toMatchObject({
      value: 'Be kind.',
    });
    expect(await h.client.blocks.retrieve(block.id)).toMatchObject({ value: 'Be kind.' });
    // A value past the limit sent with it: Letta's BlockUpdate refuses it as a 422 (its SDK tests
    // expect UnprocessableEntityError); past the stored limit alone, the core's 400.
    await expect(h.client.blocks.update(block.id, { value: 'x'.repeat(10), limit: 5 })).rejects.toMatchObject(
      { status: 422 },
    );
    const limit = (await h.client.blocks.retrieve(block.id)).limit!;
    await expect(h.client.blocks.update(block.id, { value: 'x'.repeat(limit + 1) })).rejects.toMatchObject({
      status: 400,
    });
    await h.client.blocks.delete(block.id);
    await expect(h.client.blocks.retrieve(block.id)).rejects.toMatchObject({ status: 404 });
  });

  it('shares one block between agents: an edit through one is what the other sees', async () => {
    const shared = await h.client.blocks.create({ label: 'team', value: 'Sprint 1' });
    const [a, b] = await Promise.all(
      [0, 1].map(() => h.client.agents.create({ model: 'openai/gpt-4o-mini', block_ids: [shared.id] })),
    );
    await h.client.agents.blocks.update('team', { agent_id: a.id, value: 'Sprint 2' });
    expect(await h.client.agents.blocks.retrieve('team', { agent_id: b.id })).toMatchObject({
      id: shared.id,
      value: 'Sprint 2',
    });
    const agents = (await h.client.blocks.agents.list(shared.id)).getPaginatedItems();
    expect(agents.map((agent) => agent.id).sort()).toEqual([a.id, b.id].sort());
  });

  it('attaches and detaches, refusing a second block of a label the agent has', async () => {
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Alice' }],
    });
    const notes = await h.client.blocks.create({ label: 'notes', value: 'n' });
    const attached = await h.client.agents.blocks.attach(notes.id, { agent_id: agent.id });
    expect(attached.id).toBe(agent.id);
    const labels = async () =>
      (await h.client.agents.blocks.list(agent.id)).getPaginatedItems().map((block) => block.label);
    expect(await labels()).toEqual(['human', 'notes']);
    const otherHuman = await h.client.blocks.create({ label: 'human', value: 'Bob' });
    await expect(h.client.agents.blocks.attach(otherHuman.id, { agent_id: agent.id })).rejects.toMatchObject({
      status: 400,
    });
    await h.client.agents.blocks.detach(notes.id, { agent_id: agent.id });
    expect(await labels()).toEqual(['human']);
    expect(await h.client.blocks.retrieve(notes.id)).toMatchObject({ label: 'notes' });
  });

  it('pages every block once in both orders', async () => {
    await Promise.all([0, 1, 2].map((i) => h.client.blocks.create({ label: `page-${i}`, value: String(i) })));
    const walk = async (order: 'asc' | 'desc') => {
      const ids: string[] = [];
      for await (const block of h.client.blocks.list({ limit: 2, order })) ids.push(block.id);
      return ids;
    };
    const asc = await walk('asc');
    expect(new Set(asc).size).toBe(asc.length);
    expect(await walk('desc')).toEqual([...asc].reverse());
  });
});
