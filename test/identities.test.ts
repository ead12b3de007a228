import { IdentitySchema } from '../src/api/schemas/responses';
import { useAgentServer } from './helpers/agent-server';
import { jsonRequest } from './helpers/http';

/** Letta's identities (this client version names only agents.identities; the rest is plain HTTP). */
describe('identities', () => {
  const h = useAgentServer('openai');
  const call = (method: string, path: string, body?: unknown) =>
    jsonRequest(h.server.url, method, path, body);

  it('are created, listed, updated, upserted, attached to agents and deleted', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const created = await call('POST', '/v1/identities/', {
      identifier_key: 'user-42',
      name: 'Ada',
      identity_type: 'user',
      agent_ids: [agent.id],
      properties: [{ key: 'plan', value: 'pro', type: 'string' }],
    });
    expect(created.status).toBe(200);
    expect(IdentitySchema.parse(created.json)).toEqual(created.json);
    expect(created.json).toMatchObject({ identifier_key: 'user-42', agent_ids: [agent.id] });
    const id = created.json.id as string;

    expect(
      (await call('POST', '/v1/identities/', { identifier_key: 'user-42', name: 'x', identity_type: 'user' }))
        .status,
    ).toBe(409);
    const upserted = await call('PUT', '/v1/identities/', {
      identifier_key: 'user-42',
      name: 'Ada L.',
      identity_type: 'user',
    });
    expect(upserted.json).toMatchObject({ id, name: 'Ada L.' });
    expect(
      (await call('GET', '/v1/identities/?identifier_key=user-42')).json.map((i: { id: string }) => i.id),
    ).toEqual([id]);

    const byIdentity = (await h.client.agents.list({ identity_id: id } as never)).getPaginatedItems();
    expect(byIdentity.map((a) => a.id)).toEqual([agent.id]);
    expect((await h.client.agents.retrieve(agent.id)).identity_ids).toEqual([id]);
    await h.client.agents.identities.detach(id, { agent_id: agent.id });
    expect((await call('GET', `/v1/identities/${id}/agents`)).json).toEqual([]);
    await h.client.agents.identities.attach(id, { agent_id: agent.id });
    expect((await call('GET', `/v1/identities/${id}/agents`)).json.map((a: { id: string }) => a.id)).toEqual([
      agent.id,
    ]);

    expect(
      (
        await call('PATCH', `/v1/identities/${id}`, {
          agent_ids: ['agent-00000000-0000-4000-8000-000000000000'],
        })
      ).status,
    ).toBe(404);
    expect((await call('DELETE', `/v1/identities/${id}`)).status).toBe(200);
    expect((await call('GET', `/v1/identities/${id}`)).status).toBe(404);
  });
});
