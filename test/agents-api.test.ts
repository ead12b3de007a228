import Letta from '@letta-ai/letta-client';
import { getAgent } from '../src/db/agents';
import { startTestServer, type TestServer } from './helpers/server';

describe('the agents API through the official Letta client', () => {
  let server: TestServer;
  let client: Letta;

  beforeAll(async () => {
    server = await startTestServer({ OPENAI_API_KEY: 'test-key' });
    client = new Letta({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.stopAll();
  });

  const createAgent = (extra: Partial<Letta.AgentCreateParams> = {}) =>
    client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice', limit: 50 }],
      ...extra,
    });

  it('pages through agents by cursor, in either order', async () => {
    const tag = `page-${Date.now()}`;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await createAgent({ name: `p${i}`, tags: [tag] })).id);
    const page = async (query: Letta.AgentListParams) =>
      (await client.agents.list({ tags: [tag], ...query })).getPaginatedItems().map((a) => a.id);

    expect(await page({ order: 'asc', limit: 2 })).toEqual(ids.slice(0, 2));
    expect(await page({ order: 'asc', after: ids[1] })).toEqual([ids[2]]);
    expect(await page({ order: 'asc', before: ids[2] })).toEqual(ids.slice(0, 2));
    expect(await page({ limit: 1 })).toEqual([ids[2]]); // newest first by default
    const all: string[] = [];
    for await (const agent of client.agents.list({ tags: [tag], order: 'asc', limit: 1 })) all.push(agent.id);
    expect(all).toEqual(ids);
  });

  it('answers a 1.x client with only the relationships named in include=', async () => {
    const agent = await createAgent({ tags: ['t1'] });
    const bare = await client.agents.retrieve(agent.id);
    expect([bare.blocks, bare.tools, bare.tags]).toEqual([[], [], []]);
    const withBlocks = await client.agents.retrieve(agent.id, { include: ['agent.blocks', 'agent.tags'] });
    expect(withBlocks.blocks.map((b) => b.label)).toEqual(['human']);
    expect(withBlocks.tags).toEqual(['t1']);
    expect(withBlocks.tools).toEqual([]);

    // Clients older than 1.x get everything, as from Letta.
    const res = await fetch(`${server.url}/v1/agents/${agent.id}`, { headers: { 'user-agent': 'curl/8' } });
    const full = (await res.json()) as Letta.AgentState;
    expect(full.tools.map((t) => t.name)).toContain('memory_insert');
    expect(full.blocks).toHaveLength(1);

    const bad = await fetch(`${server.url}/v1/agents/${agent.id}?include=agent.nothing`);
    expect(bad.status).toBe(422);
  });

  it('updates an agent: fields, tags, tools and secrets (which replace the old ones)', async () => {
    const agent = await createAgent({ secrets: { A: '1', B: '2' } });
    const updated = await client.agents.update(agent.id, {
      name: 'renamed',
      tags: ['x', 'y'],
      system: 'You are terse.',
      secrets: { C: '3' },
      metadata: { team: 'blue' },
    });
    expect(updated).toMatchObject({ name: 'renamed', tags: ['x', 'y'], system: 'You are terse.' });
    expect(updated.metadata).toEqual({ team: 'blue' });
    expect(updated.secrets?.map((s) => [s.key, s.value])).toEqual([['C', '****']]);

    // The agent as read, secrets masked, sent back: the secrets keep their values, new ones are taken.
    const secrets = Object.fromEntries(updated.secrets!.map((s) => [s.key, s.value]));
    await client.agents.update(agent.id, { secrets: { ...secrets, D: 'four-four-four' } });
    const stored = (await getAgent(server.db, agent.id))!.secrets.map((s) => [s.key, s.value]);
    expect(stored.sort()).toEqual([
      ['C', '3'],
      ['D', 'four-four-four'],
    ]);

    const rethink = (
      await fetch(`${server.url}/v1/agents/${agent.id}`, { headers: { 'user-agent': 'curl/8' } }).then(
        (r) => r.json() as Promise<Letta.AgentState>,
      )
    ).tools.map((t) => t.id);
    const trimmed = await client.agents.update(agent.id, { tool_ids: rethink.slice(0, 1) });
    expect(trimmed.tools.map((t) => t.id)).toEqual(rethink.slice(0, 1));
  });

  it('deletes an agent, which is then gone', async () => {
    const agent = await createAgent();
    await client.agents.delete(agent.id);
    await expect(client.agents.retrieve(agent.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.agents.delete(agent.id)).rejects.toMatchObject({ status: 404 });
  });

  it('reads and edits core-memory blocks, within their limits', async () => {
    const agent = await createAgent();
    const blocks = await client.agents.blocks.list(agent.id);
    expect(blocks.getPaginatedItems().map((b) => [b.label, b.value, b.limit])).toEqual([
      ['human', 'Name: Alice', 50],
    ]);
    const edited = await client.agents.blocks.update('human', { agent_id: agent.id, value: 'Name: Bob' });
    expect(edited.value).toBe('Name: Bob');
    expect((await client.agents.blocks.retrieve('human', { agent_id: agent.id })).value).toBe('Name: Bob');
    await expect(
      client.agents.blocks.update('human', { agent_id: agent.id, value: 'x'.repeat(51) }),
    ).rejects.toMatchObject({ status: 400 });
    await expect(client.agents.blocks.retrieve('nope', { agent_id: agent.id })).rejects.toMatchObject({
      status: 404,
    });
  });

  it('serves collection routes with and without the trailing slash', async () => {
    for (const path of ['/v1/agents', '/v1/agents/']) {
      const res = await fetch(`${server.url}${path}?limit=1`);
      expect(res.status).toBe(200);
      expect(Array.isArray(await res.json())).toBe(true);
    }
  });

  it('refuses blocks over their limit at creation, storing nothing', async () => {
    const name = `too-big-${Date.now()}`;
    await expect(
      client.agents.create({
        name,
        model: 'openai/gpt-4o-mini',
        memory_blocks: [{ label: 'human', value: 'x'.repeat(20), limit: 10 }],
      }),
    ).rejects.toMatchObject({ status: 400 });
    expect((await client.agents.list({ name })).getPaginatedItems()).toEqual([]);
  });

  it('echoes the embedding handle an agent was made with, as Letta does', async () => {
    const created = await createAgent({ embedding: 'openai/text-embedding-3-small' });
    expect(created.embedding).toBe('openai/text-embedding-3-small');
    expect((await client.agents.retrieve(created.id)).embedding).toBe('openai/text-embedding-3-small');
  });

  it("keeps one of each tool rule given twice, on create and update (Letta's rule equality)", async () => {
    const exit = { type: 'exit_loop' as const, tool_name: 'send_message' };
    const created = await createAgent({ tool_rules: [exit, exit, { ...exit, prompt_template: 'x' }] });
    expect((await client.agents.retrieve(created.id)).tool_rules).toEqual([exit]);
    const cont = { type: 'continue_loop' as const, tool_name: 'conversation_search' };
    const max = (limit: number) => ({
      type: 'max_count_per_step' as const,
      tool_name: 'test_tool',
      max_count_limit: limit,
    });
    const updated = await client.agents.update(created.id, {
      tool_rules: [cont, cont, max(2), max(2), max(3)],
    });
    expect(updated.tool_rules).toEqual([cont, max(2), max(3)]);
  });

  it("turns a tool's default_requires_approval into a rule when the tool is attached", async () => {
    await server.db.query(`UPDATE tools SET default_requires_approval = true WHERE name = 'memory_rethink'`);
    try {
      const rule = { type: 'requires_approval', tool_name: 'memory_rethink' };
      const created = await createAgent({ tools: ['memory_rethink'] });
      expect(created.tool_rules).toEqual([rule]);
      const plain = await createAgent();
      const rethink = created.tools.find((t) => t.name === 'memory_rethink')!;
      const updated = await client.agents.update(plain.id, {
        tool_ids: [...plain.tools.map((t) => t.id), rethink.id],
      });
      expect(updated.tool_rules).toEqual([rule]);
    } finally {
      await server.db.query(
        `UPDATE tools SET default_requires_approval = null WHERE name = 'memory_rethink'`,
      );
    }
  });
});
