import { toFile } from '@letta-ai/letta-client';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';
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
    const searched = await h.client.passages.search({ archive_id: archive.id, query: 'KILN' });
    expect(searched).toEqual([
      { passage: expect.objectContaining({ id: passage.id }), score: 0, metadata: {} },
    ]);
    // An agent with an embedding model finds them too, once the archive is attached.
    const embedded = await newAgent();
    await h.client.agents.archives.attach(archive.id, { agent_id: embedded.id });
    expect((await h.client.agents.passages.search(embedded.id, { query: 'KILN' })).results).toEqual([
      expect.objectContaining({ id: passage.id, content: 'The kiln fires on Sundays' }),
    ]);
  });

  it('searches passages across archives: an agent’s, an archive’s or every one, with Letta’s filters', async () => {
    const [alice, bob] = await Promise.all([newAgent(), newAgent()]);
    const [tea] = await h.client.agents.passages.create(alice.id, {
      text: 'Alice drinks zanzibar tea',
      tags: ['drink', 'alice'],
    });
    const [coffee] = await h.client.agents.passages.create(bob.id, {
      text: 'Bob drinks zanzibar coffee',
      tags: ['drink'],
    });
    // An archive of another embedding model: the query is embedded with each model it meets.
    const large = await h.client.archives.create({
      name: 'large',
      embedding: 'openai/text-embedding-3-large',
    });
    const spice = await h.client.archives.passages.create(large.id, { text: 'Zanzibar grows cloves' });
    const plain = await h.client.archives.create({ name: 'plain text' });
    const note = await h.client.archives.passages.create(plain.id, { text: 'zanzibar ferry times' });

    // A folder's passages are its files': no archive of the search's.
    const folder = await h.client.folders.create({
      name: 'trips',
      embedding: 'openai/text-embedding-3-small',
    });
    const file = await h.client.folders.files.upload(folder.id, {
      file: await toFile(Buffer.from('Zanzibar tea plantations'), 'trips.txt'),
    });
    await eventually(
      () => h.client.folders.files.retrieve(file.id, { folder_id: folder.id }),
      (f) => f.processing_status === 'completed',
      30_000,
    );

    const everywhere = await h.client.passages.search({ query: 'zanzibar tea' });
    expect(everywhere.every((r) => !r.passage.text.includes('plantations'))).toBe(true);
    expect(everywhere[0].passage.id).toBe(tea.id);
    const ids = (await h.client.passages.search({ query: 'zanzibar' })).map((r) => r.passage.id);
    expect(ids).toEqual(expect.arrayContaining([tea.id, coffee.id, spice.id, note.id]));
    expect(ids.at(-1)).toBe(note.id); // a match by its text comes after the ranked ones
    expect(everywhere[0]).toMatchObject({
      passage: {
        id: tea.id,
        text: 'Alice drinks zanzibar tea',
        archive_id: tea.archive_id,
        tags: ['drink', 'alice'],
      },
      metadata: {},
    });
    expect(everywhere[0].score).toBeGreaterThan(everywhere[1].score);
    expect(everywhere[0].passage.embedding).toHaveLength(256);

    const ofBob = await h.client.passages.search({ agent_id: bob.id, query: 'zanzibar tea' });
    expect(ofBob.map((r) => r.passage.id)).toEqual([coffee.id]);
    // agent_id wins over archive_id, as in Letta.
    const both = await h.client.passages.search({
      agent_id: alice.id,
      archive_id: large.id,
      query: 'cloves',
    });
    expect(both.map((r) => r.passage.id)).toEqual([tea.id]);
    expect(
      (await h.client.passages.search({ archive_id: large.id, query: 'cloves' })).map((r) => r.passage.id),
    ).toEqual([spice.id]);

    const tagged = (body: Parameters<typeof h.client.passages.search>[0]) =>
      h.client.passages.search({ query: 'zanzibar', ...body }).then((r) => r.map((x) => x.passage.id).sort());
    expect(await tagged({ tags: ['drink'] })).toEqual([tea.id, coffee.id].sort());
    expect(await tagged({ tags: ['drink', 'alice'], tag_match_mode: 'all' })).toEqual([tea.id]);
    expect(await tagged({ tags: ['drink'], limit: 1 })).toHaveLength(1);
    expect(
      await tagged({ tags: ['drink'], start_date: new Date(Date.now() + 60_000).toISOString() }),
    ).toEqual([]);
    expect(await tagged({ tags: ['drink'], end_date: '2000-01-01T00:00:00Z' })).toEqual([]);

    // Without a query: every passage in scope, oldest first.
    const all = await h.client.passages.search({ agent_id: alice.id });
    expect(all).toEqual([{ passage: expect.objectContaining({ id: tea.id }), score: 0, metadata: {} }]);
  });

  it('answers a search with unknown ids or bad filters as Letta does: 404 or 422, never a 500', async () => {
    const missing = (kind: string) => `${kind}-00000000-0000-4000-8000-000000000000`;
    await expect(h.client.passages.search({ agent_id: missing('agent'), query: 'x' })).rejects.toMatchObject({
      status: 404,
    });
    await expect(
      h.client.passages.search({ archive_id: missing('archive'), query: 'x' }),
    ).rejects.toMatchObject({ status: 404 });
    for (const body of [
      { limit: 0 },
      { limit: 101 },
      { tag_match_mode: 'some' },
      { start_date: 'not a date' },
      { tags: 'drink' },
      { query: 7 },
    ])
      await expect(h.client.passages.search({ query: 'x', ...body } as never)).rejects.toMatchObject({
        status: 422,
      });
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
    const [best] = await h.client.passages.search({ archive_id: archive.id, query: 'where do ravens nest' });
    expect(best.passage.id).toBe(passage.id);
    expect(best.score).toBeGreaterThan(0);
    const folder = await h.client.folders.create({ name: 'defaulted' });
    expect(folder.embedding_config).toMatchObject({ handle: 'openai/text-embedding-3-small' });
  });
});
