import Letta from '@letta-ai/letta-client';
import type { ChatRequest, OpenAiStub } from './helpers/openai-stub';
import { useAgentServer } from './helpers/agent-server';

/** Each tool rule, end to end: what the model is offered on each step of a real agent turn. */
describe('tool rules shape the tools offered to the model', () => {
  const h = useAgentServer('openai');

  const search = { name: 'conversation_search', arguments: { query: 'nothing like this' } };
  const insert = { name: 'memory_insert', arguments: { label: 'human', new_str: 'likes tea' } };

  /** Sends one message to a new agent with `rules`; the model answers with `replies`, then "done". */
  async function turn(rules: unknown[], ...replies: Parameters<OpenAiStub['enqueue']>) {
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
      tools: ['memory_rethink'],
      tool_rules: rules as Letta.AgentCreateParams['tool_rules'],
    });
    const before = h.stub.requests.length;
    h.stub.enqueue(...replies);
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Go' }],
    });
    const requests = h.stub.requests.slice(before);
    return { response, requests, offered: requests.map(offeredNames) };
  }

  const offeredNames = (request: ChatRequest) => (request.tools ?? []).map((t) => t.function.name).sort();
  const ALL = ['conversation_search', 'memory_insert', 'memory_replace', 'memory_rethink'];
  const without = (...names: string[]) => ALL.filter((n) => !names.includes(n));

  it('run_first: only that tool, forced, on the first step', async () => {
    const { offered, requests } = await turn(
      [{ type: 'run_first', tool_name: 'conversation_search' }],
      { toolCalls: [search] },
      { text: 'done' },
    );
    expect(offered).toEqual([['conversation_search'], ALL]);
    expect(requests[0].tool_choice).toEqual({ type: 'function', function: { name: 'conversation_search' } });
    expect(requests[1].tool_choice).toBe('auto');
  });

  it('exit_loop: calling the tool ends the turn with stop reason tool_rule', async () => {
    const { response, requests } = await turn([{ type: 'exit_loop', tool_name: 'memory_insert' }], {
      toolCalls: [insert],
    });
    expect(response.stop_reason.stop_reason).toBe('tool_rule');
    expect(requests).toHaveLength(1);
  });

  it('continue_loop: the turn goes on after the tool, with every tool offered', async () => {
    const { response, offered } = await turn(
      [{ type: 'continue_loop', tool_name: 'conversation_search' }],
      { toolCalls: [search] },
      { text: 'done' },
    );
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    expect(offered).toEqual([ALL, ALL]);
  });

  it('constrain_child_tools: after the parent only its children are offered, and must be called', async () => {
    const { offered, requests } = await turn(
      [{ type: 'constrain_child_tools', tool_name: 'conversation_search', children: ['memory_insert'] }],
      { toolCalls: [search] },
      { toolCalls: [insert] },
      { text: 'done' },
    );
    expect(offered).toEqual([ALL, ['memory_insert'], ALL]);
    expect(requests[1].tool_choice).toEqual({ type: 'function', function: { name: 'memory_insert' } });
  });

  it('parent_last_tool: the children are offered only right after the parent, and then alone', async () => {
    const { offered } = await turn(
      [{ type: 'parent_last_tool', tool_name: 'conversation_search', children: ['memory_insert'] }],
      { toolCalls: [search] },
      { toolCalls: [insert] },
      { text: 'done' },
    );
    expect(offered).toEqual([without('memory_insert'), ['memory_insert'], without('memory_insert')]);
  });

  it("conditional: the tool's output picks the next tool (here the default child)", async () => {
    const { offered } = await turn(
      [
        {
          type: 'conditional',
          tool_name: 'conversation_search',
          child_output_mapping: { 'a result that never comes': 'memory_rethink' },
          default_child: 'memory_replace',
        },
      ],
      { toolCalls: [search] },
      { text: 'done' },
    );
    expect(offered).toEqual([ALL, ['memory_replace']]);
  });

  it('max_count_per_step: the tool is withdrawn once called its limit of times', async () => {
    const { offered } = await turn(
      [{ type: 'max_count_per_step', tool_name: 'conversation_search', max_count_limit: 1 }],
      { toolCalls: [search] },
      { text: 'done' },
    );
    expect(offered).toEqual([ALL, without('conversation_search')]);
  });

  it('required_before_exit: ending early brings a reminder, and the turn goes on', async () => {
    const { response, requests } = await turn(
      [{ type: 'required_before_exit', tool_name: 'memory_insert' }],
      { text: 'bye' },
      { toolCalls: [insert] },
      { text: 'done' },
    );
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    expect(requests).toHaveLength(3);
    expect(requests[1].messages.at(-1)).toMatchObject({ role: 'user' });
    expect(requests[1].messages.at(-1)?.content).toContain('You must call memory_insert at least once');
  });

  it('requires_approval: a call to the tool pauses the turn for approval', async () => {
    const { response, offered } = await turn([{ type: 'requires_approval', tool_name: 'memory_insert' }], {
      toolCalls: [insert],
    });
    expect(offered).toEqual([ALL]);
    expect(response.stop_reason.stop_reason).toBe('requires_approval');
  });

  it('a call that breaks a rule gets a ToolConstraintError return', async () => {
    const { response } = await turn(
      [{ type: 'constrain_child_tools', tool_name: 'conversation_search', children: ['memory_insert'] }],
      { toolCalls: [search] },
      { toolCalls: [{ name: 'memory_rethink', arguments: { label: 'human', new_memory: 'x' } }] },
      { text: 'done' },
    );
    const returns = response.messages.filter((m) => m.message_type === 'tool_return_message') as {
      status: string;
      tool_return: string;
    }[];
    expect(returns[1].status).toBe('error');
    expect(returns[1].tool_return).toContain('[ToolConstraintError]');
  });
});
