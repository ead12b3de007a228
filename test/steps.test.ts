import { StepSchema } from '../src/api/schemas/responses';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';

/** Letta's steps through the official client: each model call of a run, with its usage. */
describe('steps', () => {
  const h = useAgentServer('openai');

  it('lists a run’s steps and the agent’s, retrieves one with its messages, and keeps feedback', async () => {
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tools: ['conversation_search'],
    });
    h.stub.enqueue(
      { toolCalls: [{ name: 'conversation_search', arguments: { query: 'x' } }] },
      { text: 'done' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'hi' }],
    });
    const runId = response.messages[0].run_id!;

    const steps = (await h.client.runs.steps.list(runId)).getPaginatedItems();
    expect(steps).toHaveLength(2);
    for (const step of steps) expect(StepSchema.parse(step)).toEqual(step);
    expect(steps[0]).toMatchObject({
      run_id: runId,
      agent_id: agent.id,
      model: 'gpt-4o-mini',
      total_tokens: 15,
    });
    expect(steps[1]).toMatchObject({ stop_reason: 'end_turn' });

    const [first] = steps;
    expect(await h.client.steps.retrieve(first.id)).toMatchObject({ id: first.id });
    const messages = (await h.client.steps.messages.list(first.id)).getPaginatedItems();
    expect(messages.map((m) => m.message_type)).toEqual(['tool_call_message', 'tool_return_message']);

    await h.client.steps.feedback.create(first.id, { feedback: 'positive', tags: ['good'] });
    const liked = (
      await h.client.steps.list({ agent_id: agent.id, feedback: 'positive' })
    ).getPaginatedItems();
    expect(liked.map((s) => s.id)).toEqual([first.id]);
    // The run's spans are stored off the request path, within a second or so.
    const trace = await eventually(
      () => h.client.runs.trace.retrieve(runId),
      (spans) => spans.some((span) => span.SpanName === 'RunActivity:callModel'),
    );
    expect(trace.map((span) => span.SpanName)).toContain('RunActivity:callModel');
    expect(await h.client.runs.usage.retrieve(runId)).toMatchObject({ step_count: 2, total_tokens: 30 });
  });
});
