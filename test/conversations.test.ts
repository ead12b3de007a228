import { useAgentServer } from './helpers/agent-server';
import type { ChatRequest } from './helpers/openai-stub';

type ChatMessage = ChatRequest['messages'][number];
const textOf = (message: ChatMessage | undefined) => String(message?.content ?? '');
const lastUserText = (request: ChatRequest) =>
  textOf([...request.messages].reverse().find((m) => m.role === 'user'));

interface Chunk {
  message_type: string;
  content?: unknown;
  stop_reason?: string;
  tool_call?: { tool_call_id: string; name: string; arguments: string };
}

describe('conversations', () => {
  const h = useAgentServer('openai');
  afterEach(() => h.stub.setDefault(() => ({ text: 'ok' })));

  const collect = async (stream: AsyncIterable<unknown>) => {
    const chunks: Chunk[] = [];
    for await (const chunk of stream) chunks.push(chunk as Chunk);
    return chunks;
  };
  const say = async (conversationId: string, content: string, extra: Record<string, unknown> = {}) =>
    collect(
      await h.client.conversations.messages.create(conversationId, {
        messages: [{ role: 'user', content }],
        ...extra,
      }),
    );
  const assistantTexts = (chunks: Chunk[]) =>
    chunks.filter((c) => c.message_type === 'assistant_message').map((c) => c.content);

  it('are created for an agent, listed, retrieved, updated and deleted in Letta’s shapes', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const created = await h.client.conversations.create({ agent_id: agent.id, summary: 'first' });
    expect(created).toMatchObject({ agent_id: agent.id, summary: 'first', in_context_message_ids: [] });
    expect(created.id).toMatch(/^conv-/);
    const other = await h.client.conversations.create({ agent_id: agent.id });
    expect((await h.client.conversations.list({ agent_id: agent.id })).map((c) => c.id)).toEqual([
      other.id,
      created.id,
    ]);
    expect(await h.client.conversations.update(created.id, { summary: 'renamed' })).toMatchObject({
      summary: 'renamed',
    });
    expect(await h.client.conversations.recompile(created.id)).toContain(`CONVERSATION_ID: ${created.id}`);
    await h.client.conversations.delete(other.id);
    await expect(h.client.conversations.retrieve(other.id)).rejects.toMatchObject({ status: 404 });
    await expect(h.client.conversations.create({ agent_id: 'agent-nope' })).rejects.toMatchObject({
      status: 404,
    });
  });

  it('keep their own histories, ordered each on its own, and share the agent’s memory', async () => {
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
    });
    const [a, b] = await Promise.all([
      h.client.conversations.create({ agent_id: agent.id }),
      h.client.conversations.create({ agent_id: agent.id }),
    ]);
    const before = h.stub.requests.length;
    h.stub.setDefault((request) => {
      if (lastUserText(request) === 'a: remember tea')
        return request.messages.at(-1)!.role === 'user'
          ? { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } }] }
          : { text: 'noted' };
      return { text: `reply to ${lastUserText(request)}`, delayMs: 5 };
    });
    expect(assistantTexts(await say(a.id, 'a: remember tea'))).toEqual(['noted']);
    const sends = [a, b].flatMap((conversation, c) =>
      Array.from({ length: 5 }, (_, i) => say(conversation.id, `${'ab'[c]}: message ${i}`)),
    );
    const replies = await Promise.all(sends);
    replies.forEach((chunks, j) =>
      expect(assistantTexts(chunks)).toEqual([`reply to ${'ab'[Math.floor(j / 5)]}: message ${j % 5}`]),
    );

    // Each model request saw its own conversation only, and the memory the other one wrote.
    for (const request of h.stub.requests.slice(before)) {
      const own = lastUserText(request)[0];
      const users = request.messages.filter((m) => m.role === 'user').map(textOf);
      expect(users.every((text) => text.startsWith(`${own}:`))).toBe(true);
      expect(textOf(request.messages[0])).toContain(`CONVERSATION_ID: ${own === 'a' ? a.id : b.id}`);
    }
    const lastOfB = h.stub.requests.filter((r) => lastUserText(r).startsWith('b:')).at(-1)!;
    expect(textOf(lastOfB.messages[0])).toContain('Likes tea');

    // Stored in turn: each message followed by its own reply, whatever order they arrived in.
    const history = (await h.client.conversations.messages.list(b.id, { order: 'asc' })).getPaginatedItems();
    const contents = history.map((m) => String((m as { content?: unknown }).content));
    expect(contents).toHaveLength(10);
    for (let i = 0; i < contents.length; i += 2) expect(contents[i + 1]).toBe(`reply to ${contents[i]}`);
    expect((await h.client.conversations.retrieve(b.id)).in_context_message_ids).toEqual(
      history.map((m) => m.id),
    );
  });

  it('address the agent’s own history as `default`, with the agent in the body', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    h.stub.enqueue({ text: 'Hello from default.' });
    const chunks = await say('default', 'hi', { agent_id: agent.id });
    expect(assistantTexts(chunks)).toEqual(['Hello from default.']);
    const own = (await h.client.agents.messages.list(agent.id, { order: 'asc' })).getPaginatedItems();
    expect(own.map((m) => m.message_type)).toEqual(['system_message', 'user_message', 'assistant_message']);
    await expect(say('default', 'who?')).rejects.toMatchObject({ status: 422 });
  });

  it('run a client-side tool: approval request, the client’s return, the continuation', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const conversation = await h.client.conversations.create({ agent_id: agent.id });
    const clientTools = [
      { name: 'ShellCommand', description: 'Runs a command', parameters: { type: 'object', properties: {} } },
    ];
    h.stub.enqueue({ toolCalls: [{ name: 'ShellCommand', arguments: { command: 'echo hi' } }] });
    const first = await say(conversation.id, 'run it', { client_tools: clientTools, background: true });
    expect(first.map((c) => c.message_type)).toEqual([
      'ping',
      'approval_request_message',
      'stop_reason',
      'usage_statistics',
    ]);
    expect(first.at(-2)).toMatchObject({ stop_reason: 'requires_approval' });
    const call = first[1].tool_call!;
    h.stub.enqueue((request) => ({ text: `got ${JSON.parse(textOf(request.messages.at(-1))).message}` }));
    const second = await collect(
      await h.client.conversations.messages.create(conversation.id, {
        messages: [
          {
            type: 'approval',
            approvals: [
              {
                type: 'tool',
                tool_call_id: call.tool_call_id,
                tool_return: 'hi',
                status: 'success',
                stdout: ['hi'],
              },
            ],
          },
        ],
        client_tools: clientTools,
      }),
    );
    expect(assistantTexts(second)).toEqual(['got hi']);
    const runs = (await h.client.runs.list({ agent_id: agent.id })).getPaginatedItems();
    expect(
      runs.every((run) => (run as { conversation_id?: string }).conversation_id === conversation.id),
    ).toBe(true);
    expect(runs.find((run) => run.stop_reason === 'requires_approval')?.background).toBe(true);
  });

  it('wait for their own approvals: another conversation of the agent goes ahead', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const [a, b] = await Promise.all([
      h.client.conversations.create({ agent_id: agent.id }),
      h.client.conversations.create({ agent_id: agent.id }),
    ]);
    const clientTools = [{ name: 'ShellCommand', parameters: { type: 'object', properties: {} } }];
    h.stub.enqueue({ toolCalls: [{ name: 'ShellCommand', arguments: { command: 'ls' } }] });
    const paused = await say(a.id, 'run it', { client_tools: clientTools });
    expect(paused.at(-2)).toMatchObject({ stop_reason: 'requires_approval' });
    await expect(say(a.id, 'and now?')).rejects.toMatchObject({
      status: 409,
      error: { detail: { code: 'PENDING_APPROVAL' } },
    });
    // What letta-code reads to find what waits: the conversation's last message, by its id.
    const lastId = (await h.client.conversations.retrieve(a.id)).in_context_message_ids!.at(-1);
    const last = await fetch(`${h.server.url}/v1/messages/${lastId}`).then((r) => r.json());
    expect(last).toEqual([expect.objectContaining({ message_type: 'approval_request_message' })]);
    h.stub.enqueue({ text: 'B is free.' });
    expect(assistantTexts(await say(b.id, 'hello b'))).toEqual(['B is free.']);
    // The agent's own history is not held either; cancelling A denies its pending call.
    h.stub.enqueue({ text: 'Default is free.' });
    expect(assistantTexts(await say('default', 'hello', { agent_id: agent.id }))).toEqual([
      'Default is free.',
    ]);
    expect(Object.values(await h.client.conversations.cancel(a.id))).toEqual(['cancelled']);
    const history = (await h.client.conversations.messages.list(a.id, { order: 'asc' })).getPaginatedItems();
    expect(history.at(-1)).toMatchObject({ message_type: 'tool_return_message', status: 'error' });
  });

  it('resume a dropped stream from its last seq_id, through the run or the conversation, without loss or repeats', async () => {
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
    });
    const conversation = await h.client.conversations.create({ agent_id: agent.id });
    h.stub.enqueue(
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } }] },
      { text: 'Noted, and more.', delayMs: 1_000 },
    );
    const stream = await h.client.conversations.messages.create(conversation.id, {
      messages: [{ role: 'user', content: 'remember tea' }],
      background: true,
    });
    const before: Chunk[] = [];
    for await (const chunk of stream) {
      before.push(chunk as Chunk);
      if ((chunk as Chunk).message_type === 'tool_return_message') break; // the connection drops
    }
    const seen = before.filter((c) => c.message_type !== 'ping') as (Chunk & {
      seq_id: number;
      run_id: string;
    })[];
    expect(seen.map((c) => [c.message_type, c.seq_id])).toEqual([
      ['tool_call_message', 1],
      ['tool_return_message', 2],
    ]);
    const runId = seen[0].run_id;
    expect((await h.client.runs.retrieve(runId)).background).toBe(true);

    const rest = await collect(await h.client.runs.messages.stream(runId, { starting_after: 2 }));
    expect(rest.filter((c) => c.message_type !== 'ping').map((c) => c.message_type)).toEqual([
      'assistant_message',
      'stop_reason',
      'usage_statistics',
    ]);
    expect(rest.find((c) => c.message_type === 'assistant_message')).toMatchObject({
      content: 'Noted, and more.',
      seq_id: 3,
    });
    // Through the conversation, by the request's run: the whole run again, numbered the same.
    const again = await collect(
      await h.client.conversations.messages.stream(conversation.id, { run_id: runId, starting_after: 1 }),
    );
    expect(
      again.filter((c) => c.message_type.endsWith('_message')).map((c) => (c as { seq_id?: number }).seq_id),
    ).toEqual([2, 3]);
    await expect(h.client.conversations.messages.stream(conversation.id, {})).rejects.toMatchObject({
      status: 400,
    });
  });

  it('compact: a summary by the agent’s model replaces what came before the latest user turn in its context', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const conversation = await h.client.conversations.create({ agent_id: agent.id });
    const summarizer: ChatRequest[] = [];
    h.stub.setDefault((request) => {
      if (textOf(request.messages[0]).startsWith('Your job is to summarize')) {
        summarizer.push(request);
        return { text: 'We talked about tea, twice.' };
      }
      return { text: `reply to ${lastUserText(request)}` };
    });
    for (const text of ['tea one', 'tea two', 'what now']) await say(conversation.id, text);
    await expect(
      h.client.conversations.messages.compact('default', { agent_id: agent.id }),
    ).rejects.toMatchObject({
      status: 400,
    });

    const compacted = await h.client.conversations.messages.compact(conversation.id, {});
    expect(compacted).toEqual({
      summary: 'We talked about tea, twice.',
      num_messages_before: 6,
      num_messages_after: 2,
    });
    expect(textOf(summarizer[0].messages[1])).toContain('user: tea one');
    expect(textOf(summarizer[0].messages[1])).not.toContain('what now');

    const before = h.stub.requests.length;
    await say(conversation.id, 'and next?');
    const next = h.stub.requests[before];
    expect(
      next.messages.map((m) => (m.role === 'system' ? 'system' : `${m.role}: ${textOf(m).slice(0, 40)}`)),
    ).toEqual([
      'system',
      'user: Note: prior messages have been hidden fr',
      'user: what now',
      'assistant: reply to what now',
      'user: and next?',
    ]);
    expect(textOf(next.messages[1])).toContain('We talked about tea, twice.');
    // Nothing is deleted: the conversation still lists every message.
    expect((await h.client.conversations.messages.list(conversation.id)).getPaginatedItems()).toHaveLength(8);
  });

  it('fork: the copy starts from the source’s context, under ids of its own, and each goes on alone', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const source = await h.client.conversations.create({ agent_id: agent.id, model: 'openai/gpt-4o-mini' });
    h.stub.setDefault((request) => ({ text: `reply to ${lastUserText(request)}` }));
    for (const text of ['one', 'two']) await say(source.id, text);
    const listed = async (id: string, extra: Record<string, unknown> = {}) =>
      (await h.client.conversations.messages.list(id, { order: 'asc', ...extra })).getPaginatedItems();
    const shown = (messages: Awaited<ReturnType<typeof listed>>) =>
      messages.map((m) => [m.message_type, 'content' in m ? m.content : null]);
    const sourceMessages = await listed(source.id);

    const fork = await h.client.conversations.fork(source.id);
    expect(fork).toMatchObject({ agent_id: agent.id, model: 'openai/gpt-4o-mini', summary: null });
    expect(fork.id).toMatch(/^conv-/);
    expect(fork.in_context_message_ids).toHaveLength(4);
    expect(fork.in_context_message_ids!.filter((id) => sourceMessages.some((m) => m.id === id))).toEqual([]);
    expect((await h.client.conversations.retrieve(fork.id)).in_context_message_ids).toEqual(
      fork.in_context_message_ids,
    );
    expect(shown(await listed(fork.id))).toEqual(shown(sourceMessages));

    const before = h.stub.requests.length;
    await say(fork.id, 'three');
    const request = h.stub.requests[before];
    expect(textOf(request.messages[0])).toContain(`CONVERSATION_ID: ${fork.id}`);
    expect(request.messages.slice(1).map((m) => `${m.role}: ${textOf(m)}`)).toEqual([
      'user: one',
      'assistant: reply to one',
      'user: two',
      'assistant: reply to two',
      'user: three',
    ]);
    expect(shown(await listed(source.id))).toEqual(shown(sourceMessages));

    // Through one message of the context, and hidden from listings.
    const firstReply = sourceMessages.find((m) => m.message_type === 'assistant_message')!;
    const early = await h.client.conversations.fork(source.id, { message_id: firstReply.id, hidden: true });
    expect(shown(await listed(early.id))).toEqual(shown(sourceMessages.slice(0, 2)));
    const ids = (await h.client.conversations.list({ agent_id: agent.id })).map((c) => c.id);
    expect(ids).toEqual(expect.arrayContaining([source.id, fork.id]));
    expect(ids).not.toContain(early.id);

    // The agent's own history: `default` with the agent, without its system message.
    await say('default', 'own', { agent_id: agent.id });
    const ofDefault = await h.client.conversations.fork('default', { agent_id: agent.id });
    expect(ofDefault).toMatchObject({ agent_id: agent.id, model: null });
    expect(shown(await listed(ofDefault.id))).toEqual([
      ['user_message', 'own'],
      ['assistant_message', 'reply to own'],
    ]);
  });

  it('fork a compacted conversation with its summary, and never a call still waiting for its result', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const compacted = await h.client.conversations.create({ agent_id: agent.id });
    h.stub.setDefault((request) =>
      textOf(request.messages[0]).startsWith('Your job is to summarize')
        ? { text: 'We talked about tea.' }
        : { text: `reply to ${lastUserText(request)}` },
    );
    for (const text of ['tea one', 'tea two']) await say(compacted.id, text);
    await h.client.conversations.messages.compact(compacted.id, {});
    const fork = await h.client.conversations.fork(compacted.id);
    expect(fork.in_context_message_ids).toHaveLength(2);
    const before = h.stub.requests.length;
    await say(fork.id, 'and next?');
    const next = h.stub.requests[before];
    expect(textOf(next.messages[1])).toContain('We talked about tea.');
    expect(next.messages.slice(2).map((m) => `${m.role}: ${textOf(m)}`)).toEqual([
      'user: tea two',
      'assistant: reply to tea two',
      'user: and next?',
    ]);

    // A turn paused on a client tool's call: the fork ends before the call, and takes messages.
    const paused = await h.client.conversations.create({ agent_id: agent.id });
    const clientTools = [
      { name: 'ShellCommand', description: 'Runs a command', parameters: { type: 'object', properties: {} } },
    ];
    h.stub.enqueue({ toolCalls: [{ name: 'ShellCommand', arguments: { command: 'echo hi' } }] });
    const first = await say(paused.id, 'run it', { client_tools: clientTools });
    expect(first.at(-2)).toMatchObject({ stop_reason: 'requires_approval' });
    const forked = await h.client.conversations.fork(paused.id);
    expect(forked.in_context_message_ids).toHaveLength(1);
    expect(assistantTexts(await say(forked.id, 'never mind'))).toEqual(['reply to never mind']);
    await expect(say(paused.id, 'still waiting')).rejects.toMatchObject({ status: 409 });

    // Through a message whose calls have results: the results come along.
    const searched = await h.client.conversations.create({ agent_id: agent.id });
    h.stub.enqueue(
      { toolCalls: [{ name: 'conversation_search', arguments: { query: 'tea' } }] },
      { text: 'found' },
    );
    await say(searched.id, 'search');
    const types = async (id: string) =>
      (await h.client.conversations.messages.list(id, { order: 'asc' }))
        .getPaginatedItems()
        .map((m) => m.message_type);
    const call = (await h.client.conversations.messages.list(searched.id, { order: 'asc' }))
      .getPaginatedItems()
      .find((m) => m.message_type === 'tool_call_message')!;
    const throughCall = await h.client.conversations.fork(searched.id, { message_id: call.id });
    expect(await types(throughCall.id)).toEqual(['user_message', 'tool_call_message', 'tool_return_message']);
    expect(assistantTexts(await say(throughCall.id, 'go on'))).toEqual(['reply to go on']);
  });

  it('fork answers unknown ids and bad parameters as Letta does: 404 or 422, never a 500', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const conversation = await h.client.conversations.create({ agent_id: agent.id });
    const missing = (kind: string) => `${kind}-00000000-0000-4000-8000-000000000000`;
    const refused = async (id: string, params: Record<string, unknown>, status: number) =>
      expect(h.client.conversations.fork(id, params as never)).rejects.toMatchObject({ status });
    await refused(missing('conv'), {}, 404);
    await refused('default', {}, 422);
    await refused('default', { agent_id: missing('agent') }, 404);
    await refused(missing('agent'), {}, 404);
    await refused(conversation.id, { message_id: missing('message') }, 404);
    await refused(conversation.id, { message_id: 'not-a-message' }, 422);
    await refused(conversation.id, { hidden: 'maybe' }, 422);
    expect((await h.client.conversations.list({ agent_id: agent.id })).map((c) => c.id)).toEqual([
      conversation.id,
    ]);
  });

  it('cancel their own runs', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const conversation = await h.client.conversations.create({ agent_id: agent.id });
    h.stub.enqueue({ text: 'slow', delayMs: 30_000 });
    const stream = h.client.conversations.messages.create(conversation.id, {
      messages: [{ role: 'user', content: 'wait' }],
    });
    const chunks = (async () => collect(await stream))();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const cancelled = await h.client.conversations.cancel(conversation.id);
    expect(Object.values(cancelled)).toEqual(['cancelled']);
    expect((await chunks).at(-2)).toMatchObject({ stop_reason: 'cancelled' });
    await expect(h.client.conversations.cancel(conversation.id)).rejects.toMatchObject({ status: 409 });

    // Deleted while a turn of it runs: the turn ends first, and the conversation is gone.
    h.stub.enqueue({ text: 'never stored', delayMs: 30_000 });
    const running = await h.client.conversations.messages.create(conversation.id, {
      messages: [{ role: 'user', content: 'wait again' }],
      background: true,
    });
    const ended = collect(running);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await h.client.conversations.delete(conversation.id);
    await expect(h.client.conversations.retrieve(conversation.id)).rejects.toMatchObject({ status: 404 });
    expect((await ended).at(-2)).toMatchObject({ stop_reason: 'cancelled' });
  });
});
