import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toFile } from '@letta-ai/letta-client';
import { runReplayOnly } from '../scripts/upgrade-check';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';
import { testTemporalAddress } from './helpers/env';
import { turnWorkflowId } from './helpers/temporal';
import { LONG_LIVED_TYPES, sampleExecutions, type Sample } from '../src/temporal/replay-sample';

/** A webhook receiver that answers 500 to everything: its deliveries go on retrying. */
async function startFailingReceiver() {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(500).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * `npm run upgrade:replay` (scripts/upgrade-check.ts --replay-only): a build replays the open and
 * recent histories of every long-lived workflow type of a running cluster, found through the server's
 * TEMPORAL_* settings, before it is made current. Here the cluster is the test run's Temporal, the
 * histories this server's: a turn paused for a client tool and finished ones, a session waiting for its
 * next message, a webhook delivery retrying, a finished file ingestion and scheduled message.
 */
describe('replaying the open and recent histories of a running cluster', () => {
  const h = useAgentServer('openai', {
    OUTBOUND_ALLOW_PRIVATE: '127.0.0.1',
    WEBHOOK_RETRY_INITIAL_MS: '600000',
    WEBHOOK_RETRY_MAX_MS: '600000',
  });
  const env = () => ({ TEMPORAL_ADDRESS: testTemporalAddress() });
  const where = () => `TaskQueue = "${h.server.turns.taskQueues.agent}"`;
  let receiver: Awaited<ReturnType<typeof startFailingReceiver>>;
  let pausedTurn: string;
  let sample: Sample;
  const idsOf = (type: string, open: boolean) =>
    sample.executions.filter((e) => e.type === type && e.open === open).map((e) => e.workflowId);

  beforeAll(async () => {
    receiver = await startFailingReceiver();
    const createAgent = () =>
      h.client.agents.create({
        model: 'openai/gpt-4o-mini',
        memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
      });
    const agent = await createAgent();
    h.stub.enqueue(
      { text: 'Hello.' },
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } }] },
      { text: 'Noted.' },
      { toolCalls: [{ name: 'ask_user', arguments: {} }] },
    );
    for (const content of ['Hi', 'I like tea', 'Ask me']) {
      const response = await h.client.agents.messages.create(agent.id, {
        messages: [{ role: 'user', content }],
        client_tools: [{ name: 'ask_user', parameters: { type: 'object', properties: {} } }],
      });
      pausedTurn = await turnWorkflowId(h.server.db, response.messages[0].run_id!);
    }

    // A second message while the first one's turn runs goes to the conversation's session, which
    // then waits for the next message.
    const busy = await createAgent();
    h.stub.enqueue({ text: 'Slowly.', delayMs: 1_500 }, { text: 'Next.' });
    const first = h.client.agents.messages.create(busy.id, { messages: [{ role: 'user', content: 'One' }] });
    await new Promise((resolve) => setTimeout(resolve, 500));
    await h.client.agents.messages.create(busy.id, { messages: [{ role: 'user', content: 'Two' }] });
    await first;

    // A run whose completion callback the receiver refuses: its delivery retries.
    const other = await createAgent();
    h.stub.enqueue({ text: 'Done.' });
    await h.client.agents.messages.createAsync(other.id, {
      messages: [{ role: 'user', content: 'Work on it' }],
      callback_url: receiver.url,
    });

    // A one-time scheduled message and a file's ingestion, both ended by the time the sample is taken.
    await h.client.agents.schedule.create(other.id, {
      schedule: { type: 'one-time', scheduled_at: Date.now() + 1_000 },
      messages: [{ role: 'user', content: 'Time for the summary' }],
    });
    const folder = await h.client.folders.create({
      name: 'notes',
      embedding: 'openai/text-embedding-3-small',
    });
    await h.client.folders.files.upload(folder.id, {
      file: await toFile(Buffer.from('Alice likes tea. Bob likes coffee.'), 'notes.txt'),
    });

    sample = await eventually(
      () =>
        sampleExecutions({
          client: h.server.turns.temporal,
          openPerType: 50,
          closedPerType: 10,
          where: where(),
        }),
      ({ counts }) =>
        counts.agentTurn.open === 1 &&
        counts.agentSession.open === 1 &&
        counts.webhookDelivery.open === 1 &&
        counts.scheduledMessage.sampledClosed === 1 &&
        counts.fileIngestion.sampledClosed === 1,
      90_000,
    );
  }, 180_000);
  afterAll(async () => {
    await receiver?.close();
  });

  it('holds the open and recently closed executions of every long-lived workflow type', () => {
    expect(Object.keys(sample.counts)).toEqual([...LONG_LIVED_TYPES]);
    expect(idsOf('agentTurn', true)).toEqual([pausedTurn]);
    expect(idsOf('agentTurn', false).length).toBeGreaterThanOrEqual(4);
    expect(idsOf('agentSession', true)).toHaveLength(1);
    expect(idsOf('webhookDelivery', true)).toHaveLength(1);
    expect(idsOf('scheduledMessage', false)).toHaveLength(1);
    expect(idsOf('fileIngestion', false)).toHaveLength(1);
    // Each names the version that last ran it: this server's.
    const ours = `${h.server.workerVersion!.deploymentName}:${h.server.workerVersion!.buildId}`;
    expect(new Set(sample.executions.map((e) => e.version))).toEqual(new Set([ours]));
  });

  it("passes with this build's workflows", async () => {
    const result = await runReplayOnly({ env: env(), where: where() });
    expect(result.failures).toEqual([]);
    expect(result.replayed).toBe(sample.executions.length);
    expect(result.counts).toEqual(sample.counts);
  });

  it('fails against a build whose turn issues other commands, naming each turn', async () => {
    const result = await runReplayOnly({
      env: env(),
      where: where(),
      workflowsPath: require.resolve('./fixtures/changed-turn-workflows'),
    });
    expect(result.replayed).toBe(sample.executions.length);
    const turns = sample.executions.filter((e) => e.type === 'agentTurn').map((e) => e.workflowId);
    expect(result.failures.map((f) => f.workflowId).sort()).toEqual(turns.sort());
    for (const failure of result.failures)
      expect(failure.error).toMatch(/^DeterminismViolationError: .*Nondeterminism/);
  });

  it('replays the open ones alone when told to take no closed ones', async () => {
    const result = await runReplayOnly({
      env: env(),
      where: where(),
      limits: { openPerType: 1, closedPerType: 0 },
      workflowsPath: require.resolve('./fixtures/changed-turn-workflows'),
    });
    expect(result.replayed).toBe(3);
    expect(result.failures.map((f) => f.workflowId)).toEqual([pausedTurn]);
  });
});
