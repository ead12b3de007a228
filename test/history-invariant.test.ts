import { assertToolCallsPaired } from '../src/memory/history-invariant';
import { insertMessage, type NewMessage } from '../src/db/messages';
import { newId } from '../src/ids';
import type { ChatMessage } from '../src/llm/types';
import { useTestDatabase } from './helpers/test-database';
import { agentWithRun } from './helpers/runs';

const call = (id: string) => ({ id, name: 'echo', arguments: '{}' });

describe('the history invariant where a model request is built', () => {
  const assistant = (...ids: string[]): ChatMessage => ({
    role: 'assistant',
    content: null,
    toolCalls: ids.map(call),
  });
  const result = (id: string): ChatMessage => ({ role: 'tool', toolCallId: id, content: 'ok' });
  const user: ChatMessage = { role: 'user', content: 'hi' };

  it('takes calls followed at once by exactly their results, in any order', () => {
    expect(() =>
      assertToolCallsPaired([user, assistant('a', 'b'), result('b'), result('a'), user]),
    ).not.toThrow();
  });

  it.each([
    ['a result missing', [assistant('a', 'b'), result('a'), user]],
    ['a message between', [assistant('a'), user, result('a')]],
    ['another call’s result', [assistant('a'), result('x')]],
    ['nothing after the calls', [user, assistant('a')]],
  ])('refuses %s', (_, messages) => {
    expect(() => assertToolCallsPaired(messages as ChatMessage[])).toThrow(/history invariant/);
  });
});

describe('the history invariant where messages are stored', () => {
  const database = useTestDatabase();

  async function agentAfterCalls(...ids: string[]) {
    const { agentId, runId } = await agentWithRun(database.db);
    const store = (message: Omit<NewMessage, 'id' | 'agent_id' | 'run_id'>) =>
      insertMessage(database.db, { id: newId('message'), agent_id: agentId, run_id: runId, ...message });
    await store({ role: 'user', content: [{ type: 'text', text: 'go' }] });
    await store({ role: 'assistant', tool_calls: ids.map(call) });
    return store;
  }
  const returns = (...ids: string[]) =>
    ids.map((id) => ({
      tool_call_id: id,
      status: 'success' as const,
      func_response: 'ok',
      stdout: null,
      stderr: null,
    }));

  it('refuses anything but exactly the results after tool calls, and stores nothing of it', async () => {
    const store = await agentAfterCalls('call_a', 'call_b');
    await expect(store({ role: 'user', content: [{ type: 'text', text: 'too soon' }] })).rejects.toThrow(
      /history invariant/,
    );
    await expect(store({ role: 'tool', tool_returns: returns('call_a') })).rejects.toThrow(
      /history invariant/,
    );
    await expect(store({ role: 'tool', tool_returns: returns('call_a', 'call_x') })).rejects.toThrow(
      /history invariant/,
    );
    await store({ role: 'tool', tool_returns: returns('call_b', 'call_a') });
    await store({ role: 'user', content: [{ type: 'text', text: 'now' }] });
  });

  it('lets an approval stand between the calls and their results', async () => {
    const store = await agentAfterCalls('call_a');
    await store({
      role: 'approval',
      approvals: [{ type: 'approval', tool_call_id: 'call_a', approve: true }],
    });
    await store({ role: 'tool', tool_returns: returns('call_a') });
  });

  it('refuses results that no call waits for', async () => {
    const { agentId, runId } = await agentWithRun(database.db);
    await expect(
      insertMessage(database.db, {
        id: newId('message'),
        agent_id: agentId,
        run_id: runId,
        role: 'tool',
        tool_returns: returns('call_z'),
      }),
    ).rejects.toThrow(/history invariant/);
  });
});
