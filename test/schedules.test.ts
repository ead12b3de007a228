import Letta from '@letta-ai/letta-client';
import { ScheduleNotFoundError } from '@temporalio/client';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';
import type { StartedProcess } from './helpers/process';
import { apiUrl, killProcess, processTestBed, startApiProcess } from './helpers/server-processes';

/** The runs a schedule's firings made, oldest first. */
const firingsOf = async (client: Letta, agentId: string, scheduleId: string) =>
  (await client.runs.list({ agent_id: agentId, limit: 100, order: 'asc' }))
    .getPaginatedItems()
    .filter(
      (run) => (run.metadata as { scheduled_message_id?: string })?.scheduled_message_id === scheduleId,
    );

describe('scheduled messages (agents.schedule)', () => {
  const h = useAgentServer('openai');
  const createAgent = () =>
    h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Ann' }],
    });
  const scheduleHandle = (id: string) =>
    h.server.turns.temporal.schedule.getHandle(`${h.server.turns.deploymentId}/schedule/${id}`);

  it('sends a one-time message at its time, as an ordinary turn, and fires no more', async () => {
    const agent = await createAgent();
    const at = Date.now() + 3_000;
    const created = await h.client.agents.schedule.create(agent.id, {
      schedule: { type: 'one-time', scheduled_at: at },
      messages: [{ role: 'user', content: 'Time for the daily summary' }],
    });
    expect(Math.abs(Date.parse(created.next_scheduled_at!) - at)).toBeLessThan(1_000);
    // A Temporal Schedule, as the Temporal UI lists it.
    expect((await scheduleHandle(created.id).describe()).state.remainingActions).toBe(1);
    const runs = await eventually(
      () => firingsOf(h.client, agent.id, created.id),
      (found) => found.some((run) => run.status === 'completed'),
    );
    expect(runs).toHaveLength(1);
    expect(Date.parse(runs[0].created_at!)).toBeGreaterThanOrEqual(at - 1_000);
    const history = (await h.client.agents.messages.list(agent.id, { order: 'asc' })).getPaginatedItems();
    expect(history).toEqual(
      expect.arrayContaining([expect.objectContaining({ content: 'Time for the daily summary' })]),
    );
    const retrieved = await h.client.agents.schedule.retrieve(created.id, { agent_id: agent.id });
    expect(retrieved).toMatchObject({
      id: created.id,
      agent_id: agent.id,
      next_scheduled_time: null,
      schedule: { type: 'one-time', scheduled_at: at },
      message: { messages: [{ role: 'user', content: 'Time for the daily summary' }] },
    });
  });

  it('fires a recurring message on its cron expression until it is deleted', async () => {
    const agent = await createAgent();
    const created = await h.client.agents.schedule.create(agent.id, {
      schedule: { type: 'recurring', cron_expression: '@every 2s' },
      messages: [{ role: 'user', content: 'Check in' }],
      max_steps: 3,
    });
    const runs = await eventually(
      () => firingsOf(h.client, agent.id, created.id),
      (found) => found.filter((run) => run.status === 'completed').length >= 2,
    );
    expect(runs.filter((run) => run.status === 'completed').length).toBeGreaterThanOrEqual(2);
    const listed = await h.client.agents.schedule.list(agent.id);
    expect(listed).toMatchObject({ has_next_page: false, scheduled_messages: [{ id: created.id }] });
    expect(listed.scheduled_messages[0].next_scheduled_time).toBeTruthy();

    expect(await h.client.agents.schedule.delete(created.id, { agent_id: agent.id })).toEqual({
      success: true,
    });
    await expect(scheduleHandle(created.id).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
    const after = (await firingsOf(h.client, agent.id, created.id)).length;
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    expect((await firingsOf(h.client, agent.id, created.id)).length).toBe(after);
    expect((await h.client.agents.schedule.list(agent.id)).scheduled_messages).toEqual([]);
  });

  it('refuses a bad schedule with 400 and an unknown agent with 404, and deletes schedules with their agent', async () => {
    const agent = await createAgent();
    const messages = [{ role: 'user' as const, content: 'hi' }];
    await expect(
      h.client.agents.schedule.create(agent.id, {
        schedule: { type: 'recurring', cron_expression: 'every full moon' },
        messages,
      }),
    ).rejects.toMatchObject({ status: 400 });
    await expect(
      h.client.agents.schedule.create(agent.id, {
        schedule: { scheduled_at: Date.now() - 60_000 },
        messages,
      }),
    ).rejects.toMatchObject({ status: 400 });
    await expect(
      h.client.agents.schedule.create('agent-00000000-0000-4000-8000-000000000000', {
        schedule: { scheduled_at: Date.now() + 60_000 },
        messages,
      }),
    ).rejects.toMatchObject({ status: 404 });
    expect((await h.client.agents.schedule.list(agent.id)).scheduled_messages).toEqual([]);

    const kept = await h.client.agents.schedule.create(agent.id, {
      schedule: { type: 'recurring', cron_expression: '0 9 * * *' },
      messages,
    });
    await h.client.agents.delete(agent.id);
    await expect(scheduleHandle(kept.id).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
  });
});

/** A recurring schedule keeps firing across a kill -9 and restart of the server between firings. */
describe('scheduled messages across a kill -9 of the server', () => {
  let bed: Awaited<ReturnType<typeof processTestBed>>;
  let env: Record<string, string>;
  let server: StartedProcess | undefined;

  beforeAll(async () => {
    bed = await processTestBed('schedules');
    env = bed.env;
  });
  afterAll(async () => {
    if (server) await killProcess(server, 'SIGKILL');
    await bed?.close();
  });

  it('fires after the restart, one-time and recurring alike', async () => {
    server = await startApiProcess(env, 'all');
    let client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 });
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini' });
    const recurring = await client.agents.schedule.create(agent.id, {
      schedule: { type: 'recurring', cron_expression: '@every 2s' },
      messages: [{ role: 'user', content: 'tick' }],
    });
    await eventually(
      () => firingsOf(client, agent.id, recurring.id),
      (runs) => runs.length >= 1,
    );
    const oneTime = await client.agents.schedule.create(agent.id, {
      schedule: { type: 'one-time', scheduled_at: Date.now() + 6_000 },
      messages: [{ role: 'user', content: 'once, while the server is down' }],
    });
    await killProcess(server, 'SIGKILL');
    const killedAt = new Date();
    await new Promise((resolve) => setTimeout(resolve, 8_000)); // the one-time message's time passes
    server = await startApiProcess(env, 'all');
    client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 });
    const ticks = await eventually(
      () => firingsOf(client, agent.id, recurring.id),
      (runs) =>
        runs.filter((run) => run.status === 'completed' && new Date(run.created_at!) > killedAt).length >= 2,
      30_000,
    );
    expect(ticks.filter((run) => new Date(run.created_at!) > killedAt).length).toBeGreaterThanOrEqual(2);
    const once = await eventually(
      () => firingsOf(client, agent.id, oneTime.id),
      (runs) => runs.some((run) => run.status === 'completed'),
      30_000,
    );
    expect(once).toHaveLength(1);
    await client.agents.delete(agent.id); // its schedules go with it
  });
});
