import { useAgentServer } from './helpers/agent-server';
import { toolReturnsOf } from './helpers/tool-returns';

/** Letta's archival memory through the official client: passages, archives, and the agent's tools. */
describe('archival memory', () => {
  const h = useAgentServer('openai');
  const newAgent = (extra: Record<string, unknown> = {}) =>
    h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      embedding: 'openai/text-embedding-3-small',
      ...extra,
    });

  it('inserts, lists, searches (the relevant passage first) and deletes an agent’s passages', async () => {
    const agent = await newAgent();
    const [tea] = await h.client.agents.passages.create(agent.id, {
      text: 'Alice drinks green tea',
      tags: ['food'],
    });
    expect(tea).toMatchObject({
      text: 'Alice drinks green tea',
      tags: ['food'],
      archive_id: expect.any(String),
    });
    await h.client.agents.passages.create(agent.id, { text: 'The build deploys on Fridays' });
    await h.client.agents.passages.create(agent.id, { text: 'Bob prefers coffee', tags: ['food'] });

    const listed = await h.client.agents.passages.list(agent.id);
    expect(listed.map((p) => p.text)).toEqual([
      'Alice drinks green tea',
      'The build deploys on Fridays',
      'Bob prefers coffee',
    ]);
    const found = await h.client.agents.passages.search(agent.id, { query: 'what tea does Alice drink' });
    expect(found.count).toBe(3);
    expect(found.results[0]).toMatchObject({ id: tea.id, content: 'Alice drinks green tea', tags: ['food'] });
    expect(found.results[0].timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00$/);
    const tagged = await h.client.agents.passages.search(agent.id, { query: 'deploys', tags: ['food'] });
    expect(tagged.results.map((r) => r.content).sort()).toEqual([
      'Alice drinks green tea',
      'Bob prefers coffee',
    ]);

    await h.client.agents.passages.delete(tea.id!, { agent_id: agent.id });
    expect((await h.client.agents.passages.list(agent.id)).map((p) => p.id)).not.toContain(tea.id);
  });

  it('keeps archives of their own, which agents attach and detach', async () => {
    const archive = await h.client.archives.create({
      name: 'handbook',
      embedding: 'openai/text-embedding-3-small',
    });
    expect(archive).toMatchObject({ name: 'handbook', vector_db_provider: 'native' });
    await h.client.archives.passages.create(archive.id, { text: 'Vacation needs two weeks notice' });
    await h.client.archives.passages.createMany(archive.id, {
      passages: [{ text: 'Expenses are filed monthly' }, { text: 'The office opens at nine' }],
    });
    const agent = await newAgent();
    await h.client.agents.archives.attach(archive.id, { agent_id: agent.id });
    const found = await h.client.agents.passages.search(agent.id, {
      query: 'vacation notice',
      top_k: 1,
    });
    expect(found.results.map((r) => r.content)).toEqual(['Vacation needs two weeks notice']);
    expect(
      (await h.client.archives.list({ agent_id: agent.id })).getPaginatedItems().map((a) => a.id),
    ).toEqual([archive.id]);
    await h.client.agents.archives.detach(archive.id, { agent_id: agent.id });
    expect((await h.client.agents.passages.search(agent.id, { query: 'vacation' })).count).toBe(0);
    await h.client.archives.update(archive.id, { description: 'rules' });
    expect(await h.client.archives.retrieve(archive.id)).toMatchObject({ description: 'rules' });
    await h.client.archives.delete(archive.id);
    await expect(h.client.archives.retrieve(archive.id)).rejects.toMatchObject({ status: 404 });
  });

  it('keeps the passages of an agent or an archive without an embedding model as text, found by the words of a search, as Letta does', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    expect(agent.embedding_config).toBeNull();
    const [kept] = await h.client.agents.passages.create(agent.id, { text: 'Dana keeps Bees' });
    expect(kept).toMatchObject({ text: 'Dana keeps Bees', embedding: null, embedding_config: null });
    const found = await h.client.agents.passages.search(agent.id, { query: 'bees' });
    expect(found.results.map((r) => r.content)).toEqual(['Dana keeps Bees']);
    expect((await h.client.agents.passages.search(agent.id, { query: 'wasps' })).count).toBe(0);

    const archive = await h.client.archives.create({ name: 'plain' });
    expect(archive.embedding_config).toBeNull();
    const passage = await h.client.archives.passages.create(archive.id, {
      text: 'The kiln fires on Sundays',
    });
    expect(passage).toMatchObject({ archive_id: archive.id, embedding: null, embedding_config: null });
    await h.client.archives.passages.createMany(archive.id, { passages: [{ text: 'Glazes dry overnight' }] });
    // An agent with an embedding model finds them too, once the archive is attached.
    const embedded = await newAgent();
    await h.client.agents.archives.attach(archive.id, { agent_id: embedded.id });
    expect((await h.client.agents.passages.search(embedded.id, { query: 'KILN' })).results).toEqual([
      expect.objectContaining({ id: passage.id, content: 'The kiln fires on Sundays' }),
    ]);
  });

  it('gives the agent archival_memory_insert and archival_memory_search', async () => {
    const agent = await newAgent({ tools: ['archival_memory_insert', 'archival_memory_search'] });
    h.stub.enqueue(
      {
        toolCalls: [
          {
            name: 'archival_memory_insert',
            arguments: { content: 'Carol’s birthday is in May', tags: ['people'] },
          },
        ],
      },
      { toolCalls: [{ name: 'archival_memory_search', arguments: { query: 'birthday of Carol' } }] },
      { text: 'Noted.' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'remember and recall' }],
    });
    const [inserted, searched] = toolReturnsOf(response.messages);
    expect(inserted).toMatchObject({ status: 'success', tool_return: 'None' });
    expect(searched.status).toBe('success');
    expect(JSON.parse(String(searched.tool_return))).toEqual([
      expect.objectContaining({ content: 'Carol’s birthday is in May', tags: ['people'] }),
    ]);
  });
});

/** The server's default embedding model (Letta's LETTA_DEFAULT_EMBEDDING_HANDLE). */
describe('archival memory with a default embedding model', () => {
  const h = useAgentServer('openai', { LETTA_DEFAULT_EMBEDDING_HANDLE: 'openai/text-embedding-3-small' });

  it('embeds the passages of agents, archives and folders created without one', async () => {
    const archive = await h.client.archives.create({ name: 'defaulted' });
    expect(archive.embedding_config).toMatchObject({
      handle: 'openai/text-embedding-3-small',
      embedding_model: 'text-embedding-3-small',
    });
    const passage = await h.client.archives.passages.create(archive.id, { text: 'Ravens nest in the tower' });
    expect(passage.embedding).toHaveLength(256);
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    expect(agent.embedding_config).toMatchObject({ handle: 'openai/text-embedding-3-small' });
    await h.client.agents.archives.attach(archive.id, { agent_id: agent.id });
    const [own] = await h.client.agents.passages.create(agent.id, { text: 'Owls hunt at night' });
    expect(own.embedding).toHaveLength(256);
    const found = await h.client.agents.passages.search(agent.id, { query: 'where do ravens nest' });
    expect(found.results.map((r) => r.id)).toEqual([passage.id, own.id]);
    const folder = await h.client.folders.create({ name: 'defaulted' });
    expect(folder.embedding_config).toMatchObject({ handle: 'openai/text-embedding-3-small' });
  });
});
