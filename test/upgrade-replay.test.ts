import { runReplayOnly } from '../scripts/upgrade-check';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';
import { testTemporalAddress } from './helpers/env';
import { turnWorkflowId } from './helpers/temporal';
import { sampleExecutions } from '../src/temporal/replay-sample';

/**
 * `npm run upgrade:replay` (scripts/upgrade-check.ts --replay-only): a build replays a sample of the
 * turn and session histories of a running cluster, found through the server's TEMPORAL_* settings,
 * before it is made current. Here the cluster is the test run's Temporal, the sample this server's
 * turns: a finished one, one with a tool call, one paused for a client tool.
 */
describe('replaying the recent histories of a running cluster', () => {
  const h = useAgentServer('openai');
  const env = () => ({ TEMPORAL_ADDRESS: testTemporalAddress() });
  const where = () => `TaskQueue = "${h.server.turns.taskQueues.agent}"`;
  const turnIds: string[] = [];

  beforeAll(async () => {
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
    });
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
      turnIds.push(await turnWorkflowId(h.server.db, response.messages[0].run_id!));
    }
    const listed = await eventually(
      () => sampleExecutions({ client: h.server.turns.temporal, limit: 50, where: where() }),
      (sample) => sample.length === turnIds.length,
    );
    expect(listed.map((s) => s.workflowId).sort()).toEqual([...turnIds].sort());
  });

  it("passes with this build's workflows", async () => {
    const result = await runReplayOnly({ env: env(), where: where() });
    expect(result).toEqual({ replayed: 3, failures: [] });
  });

  it('fails against a build whose turn issues other commands, naming each workflow', async () => {
    const result = await runReplayOnly({
      env: env(),
      where: where(),
      workflowsPath: require.resolve('./fixtures/changed-turn-workflows'),
    });
    expect(result.replayed).toBe(3);
    expect(result.failures.map((f) => f.workflowId).sort()).toEqual([...turnIds].sort());
    for (const failure of result.failures)
      expect(failure.error).toMatch(/^DeterminismViolationError: .*Nondeterminism/);
  });

  it('samples at most the limit, the running turn first', async () => {
    const result = await runReplayOnly({
      env: env(),
      where: where(),
      limit: 1,
      workflowsPath: require.resolve('./fixtures/changed-turn-workflows'),
    });
    expect(result.failures.map((f) => f.workflowId)).toEqual([turnIds[2]]);
  });
});
