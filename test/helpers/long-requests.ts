import type { AgentServer } from './agent-server';

/**
 * One request of `inserts` memory_insert steps, then a final reply, by an agent whose rule lets
 * memory_insert run three times a request (the later calls are refused): a request whose steps carry
 * the tool rules' history. Its response, once the run has stopped.
 */
export async function insertsUnderCountRule(h: AgentServer<'openai'>, inserts: number) {
  const agent = await h.client.agents.create({
    model: 'openai/gpt-4o-mini',
    memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
    tool_rules: [{ type: 'max_count_per_step', tool_name: 'memory_insert', max_count_limit: 3 }],
  });
  let step = 0;
  h.stub.setDefault(() =>
    ++step <= inserts
      ? { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: `fact ${step}` } }] }
      : { text: 'Remembered what I could.' },
  );
  return h.client.agents.messages.create(agent.id, {
    messages: [{ role: 'user', content: `Remember ${inserts} facts` }],
  });
}
