import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';
import type { ChatRequest } from './helpers/openai-stub';
import { startOpenAiStub, type OpenAiStub } from './helpers/openai-stub';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { processesMentioning, type StartedProcess } from './helpers/process';
import { apiUrl, killProcess, serverProcessEnv, startApiProcess } from './helpers/server-processes';
import { testTemporalAddress } from './helpers/env';
import { startTestServer, type TestServer } from './helpers/server';
import { WorkflowNotFoundError } from '@temporalio/client';
import { sessionWorkflowIdFor } from '../src/agent/turns';

type ChatMessage = ChatRequest['messages'][number];

const textOf = (message: ChatMessage | undefined) => String(message?.content ?? '');

/** The model request's last user message: the one the turn answers. */
const lastUserText = (request: ChatRequest) =>
  textOf([...request.messages].reverse().find((m) => m.role === 'user'));

/**
 * The history invariant, as a provider checks it: each assistant message with tool calls is followed
 * at once by one tool message per call, in any order, and by nothing else before them.
 */
function unpairedToolCalls(request: ChatRequest): string[] {
  const problems: string[] = [];
  request.messages.forEach((message, i) => {
    const calls = (message.tool_calls ?? []) as { id: string }[];
    if (message.role !== 'assistant' || !calls.length) return;
    const next = request.messages.slice(i + 1, i + 1 + calls.length);
    const returned = next.filter((m) => m.role === 'tool').map((m) => m.tool_call_id);
    if (returned.length !== calls.length || !calls.every((c) => returned.includes(c.id)))
      problems.push(`assistant message ${i}: calls ${calls.map((c) => c.id)}, then ${JSON.stringify(next)}`);
  });
  return problems;
}

const ECHO_TOOL = `
def echo_back(text: str) -> str:
    """Echoes the text.

    Args:
        text: what to echo
    """
    return "echo:" + text
`;

/**
 * A model that answers a user message with a call of echo_back on its text, under the same tool-call
 * id every time (as servers that number calls per request do), and a tool's return with `done: …`.
 */
const echoingModel = (callId: string) => (request: ChatRequest) => {
  const last = request.messages.at(-1)!;
  if (last.role === 'user')
    return { toolCalls: [{ id: callId, name: 'echo_back', arguments: { text: textOf(last) } }] };
  return { text: `done: ${JSON.parse(textOf(last)).message}` };
};

describe('one agent, one turn at a time', () => {
  const h = useAgentServer('openai');
  afterEach(() => h.stub.setDefault(() => ({ text: 'ok' })));

  const messages = (agentId: string) =>
    h.client.agents.messages.list(agentId, { order: 'asc', limit: 1000 }).then((p) => p.getPaginatedItems());

  /** The assistant's reply a request got back, whichever way it was sent. */
  async function replyText(agentId: string, content: string, mode: 'blocking' | 'streaming' | 'background') {
    const messages = [{ role: 'user' as const, content }];
    const assistantText = (items: { message_type?: string; content?: unknown }[]) =>
      items.filter((m) => m.message_type === 'assistant_message').map((m) => m.content);
    if (mode === 'blocking') {
      const response = await h.client.agents.messages.create(agentId, { messages });
      expect(response.stop_reason.stop_reason).toBe('end_turn');
      return assistantText(response.messages);
    }
    if (mode === 'streaming') {
      const stream = await h.client.agents.messages.create(agentId, { messages, streaming: true });
      const chunks: { message_type?: string; content?: unknown; stop_reason?: string }[] = [];
      for await (const chunk of stream) chunks.push(chunk as (typeof chunks)[number]);
      expect(chunks.find((c) => c.message_type === 'stop_reason')).toMatchObject({ stop_reason: 'end_turn' });
      return assistantText(chunks);
    }
    const run = await h.client.agents.messages.createAsync(agentId, { messages });
    await eventually(
      () => h.client.runs.retrieve(run.id),
      (current) => current.status === 'completed',
      60_000,
    );
    return assistantText((await h.client.runs.messages.list(run.id)).getPaginatedItems());
  }

  it('answers 30 concurrent messages (blocking, streaming, background), each with its own reply, stored in turn', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const before = h.stub.requests.length;
    h.stub.setDefault((request) => ({ text: `reply to ${lastUserText(request)}`, delayMs: 10 }));
    const modes = ['blocking', 'streaming', 'background'] as const;
    const texts = Array.from({ length: 30 }, (_, i) => `message ${i}`);
    const replies = await Promise.all(texts.map((content, i) => replyText(agent.id, content, modes[i % 3])));
    replies.forEach((reply, i) => expect(reply).toEqual([`reply to message ${i}`]));
    // Every model request ended on the message it answered: no other request's message slipped in.
    const requests = h.stub.requests.slice(before);
    expect(requests).toHaveLength(30);
    for (const request of requests) expect(textOf(request.messages.at(-1))).toBe(lastUserText(request));
    const history = (await messages(agent.id)).filter((m) => m.message_type !== 'system_message');
    expect(history).toHaveLength(60);
    for (let i = 0; i < history.length; i += 2) {
      expect(history[i].message_type).toBe('user_message');
      expect(history[i + 1]).toMatchObject({
        message_type: 'assistant_message',
        content: `reply to ${(history[i] as { content: string }).content}`,
      });
    }
  });

  it('gives each of two agents its own tool result when the model reuses `call_1` for both', async () => {
    const tool = await h.client.tools.create({ source_code: ECHO_TOOL });
    const agents = await Promise.all(
      [0, 1].map(() => h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] })),
    );
    const before = h.stub.requests.length;
    h.stub.setDefault(echoingModel('call_1'));
    for (let round = 0; round < 2; round++) {
      const responses = await Promise.all(
        agents.map((agent, i) =>
          h.client.agents.messages.create(agent.id, {
            messages: [{ role: 'user', content: `agent ${i} round ${round}` }],
          }),
        ),
      );
      responses.forEach((response, i) => {
        const call = response.messages.find((m) => m.message_type === 'tool_call_message');
        const result = response.messages.find((m) => m.message_type === 'tool_return_message');
        expect(result).toMatchObject({ tool_return: `echo:agent ${i} round ${round}`, status: 'success' });
        // The ids shown are the server's own, so an answer or a return names exactly one call.
        expect((call as { tool_call: { tool_call_id: string } }).tool_call.tool_call_id).not.toBe('call_1');
      });
    }
    expect(h.stub.requests.slice(before).flatMap(unpairedToolCalls)).toEqual([]);
  });

  it('runs 10 concurrent tool-calling turns one after another: each gets its own results, no call is left unanswered', async () => {
    const tool = await h.client.tools.create({ source_code: ECHO_TOOL });
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
    const before = h.stub.requests.length;
    // Like llama.cpp, the model numbers its calls per request: every turn's call is `call_0`.
    h.stub.setDefault(echoingModel('call_0'));
    const texts = Array.from({ length: 10 }, (_, i) => `tool turn ${i}`);
    const responses = await Promise.all(
      texts.map((content) =>
        h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content }] }),
      ),
    );
    responses.forEach((response, i) => {
      const toolReturn = response.messages.find((m) => m.message_type === 'tool_return_message');
      expect(toolReturn).toMatchObject({ tool_return: `echo:tool turn ${i}`, status: 'success' });
      expect(response.messages.at(-1)).toMatchObject({ content: `done: echo:tool turn ${i}` });
    });
    const requests = h.stub.requests.slice(before);
    expect(requests).toHaveLength(20);
    expect(requests.flatMap(unpairedToolCalls)).toEqual([]);
  });

  it('cancels in the middle of a tool call: the cancel answers once the run ended and the tool stopped, and the next message goes at once', async () => {
    const marker = `${Math.floor(Math.random() * 1e6) + 1000}.25`;
    const tool = await h.client.tools.create({
      source_code: `
def wait_long() -> str:
    """Waits a long time."""
    import subprocess
    subprocess.run(["sleep", "${marker}"])
    return "woke up"
`,
    });
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
    h.stub.enqueue({ toolCalls: [{ name: 'wait_long', arguments: {} }] });
    const run = await h.client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'Wait for it' }],
    });
    await eventually(
      async () => processesMentioning(marker),
      (pids) => pids.length > 0,
      20_000,
    );

    const started = Date.now();
    const cancelled = await h.client.agents.messages.cancel(agent.id);
    const tookMs = Date.now() - started;
    expect(cancelled).toEqual({ [run.id]: 'cancelled' });
    expect(tookMs).toBeLessThan(10_000);
    // In effect when it answers: the run ended, the tool's process is gone, its call has a result.
    expect(await h.client.runs.retrieve(run.id)).toMatchObject({
      status: 'cancelled',
      stop_reason: 'cancelled',
    });
    expect(processesMentioning(marker)).toEqual([]);
    const after = await messages(agent.id);
    expect(after.map((m) => m.message_type).slice(-3)).toEqual([
      'user_message',
      'tool_call_message',
      'tool_return_message',
    ]);
    expect(after.at(-1)).toMatchObject({ status: 'error' });

    const before = h.stub.requests.length;
    h.stub.enqueue({ text: 'Here again.' });
    const next = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(next.messages.at(-1)).toMatchObject({ content: 'Here again.' });
    expect(unpairedToolCalls(h.stub.requests[before])).toEqual([]);
  });

  it('cancels queued messages before their turn: they store nothing', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    h.stub.enqueue({ text: 'slow', delayMs: 30_000 });
    const first = await h.client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'first' }],
    });
    const queued = await h.client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'second' }],
    });
    const cancelled = await h.client.agents.messages.cancel(agent.id, { run_ids: [queued.id] });
    expect(cancelled).toEqual({ [queued.id]: 'cancelled' });
    expect(await h.client.runs.retrieve(queued.id)).toMatchObject({ status: 'cancelled' });
    expect(await h.client.agents.messages.cancel(agent.id)).toEqual({ [first.id]: 'cancelled' });
    const contents = (await messages(agent.id)).map((m) => (m as { content?: unknown }).content);
    expect(contents).not.toContain('second');
  });
});

describe('a bounded queue per agent', () => {
  const h = useAgentServer('openai', { AGENT_MAX_QUEUED_MESSAGES: '2' });

  it('refuses a message past the queue with 409, and takes the ones within it', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    h.stub.enqueue({ text: 'slow', delayMs: 3_000 });
    const running = h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'm0' }],
    });
    // The first turn has started (its model call waits): the next ones queue behind it.
    const seen = h.stub.requests.length;
    await eventually(
      async () => h.stub.requests.length,
      (n) => n > seen,
    );
    const send = (content: string) =>
      h.client.agents.messages.createAsync(agent.id, { messages: [{ role: 'user', content }] });
    await send('m1');
    await send('m2');
    await expect(send('m3')).rejects.toMatchObject({ status: 409 });
    expect((await running).stop_reason.stop_reason).toBe('end_turn');
  });
});

describe("a conversation's lane: turns of an idle one start without its session", () => {
  const h = useAgentServer('openai', { AGENT_SESSION_IDLE_MS: '300' });
  const sessionOf = (agentId: string) =>
    h.server.turns.temporal.workflow.getHandle(
      sessionWorkflowIdFor(h.server.turns.deploymentId, agentId, null),
    );
  const sendTo = (agentId: string) => (content: string) =>
    h.client.agents.messages.create(agentId, { messages: [{ role: 'user', content }] });
  /** Sends a message whose model call takes a while, and waits until that call has begun; then its answer. */
  const slowTurn = async (send: (content: string) => Promise<unknown>, content: string, delayMs: number) => {
    h.stub.enqueue({ text: 'slow', delayMs });
    const seen = h.stub.requests.length;
    const answered = send(content);
    await eventually(
      async () => h.stub.requests.length,
      (n) => n > seen,
    );
    return { answered };
  };
  const userTexts = async (agentId: string) =>
    (await h.client.agents.messages.list(agentId, { order: 'asc' }))
      .getPaginatedItems()
      .flatMap((m) => (m.message_type === 'user_message' ? [m.content] : []));

  it('queues a message behind a turn the API started, in a session that ends idle and starts again', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const session = sessionOf(agent.id);
    const send = sendTo(agent.id);

    expect((await send('first')).stop_reason.stop_reason).toBe('end_turn');
    await expect(session.describe()).rejects.toThrow(WorkflowNotFoundError);

    // 'third' waits in a session for the lane 'second' holds, and is woken as 'second' gives it back.
    const second = (await slowTurn(send, 'second', 1_000)).answered;
    expect((await send('third')).stop_reason.stop_reason).toBe('end_turn');
    await second;
    const firstSession = (await session.describe()).runId;
    await eventually(
      async () => (await session.describe()).status.name,
      (status) => status === 'COMPLETED',
    );

    const fourth = (await slowTurn(send, 'fourth', 500)).answered;
    expect((await send('fifth')).stop_reason.stop_reason).toBe('end_turn');
    await fourth;
    expect((await session.describe()).runId).not.toBe(firstSession);
    expect(await userTexts(agent.id)).toEqual(['first', 'second', 'third', 'fourth', 'fifth']);
  });

  it('takes the lane back from a turn terminated in the Temporal UI: its run failed, the next one answered', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const send = sendTo(agent.id);
    h.stub.enqueue({ text: 'never read', delayMs: 5_000 });
    const stuck = await h.client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'stuck' }],
    });
    await eventually(
      async () => (await h.client.runs.retrieve(stuck.id)).status,
      (status) => status === 'running',
    );
    const workflowId = (
      await h.server.db.query<{ workflow_id: string }>('SELECT workflow_id FROM runs WHERE id = $1', [
        stuck.id,
      ])
    )[0].workflow_id;
    await h.server.turns.temporal.workflow.getHandle(workflowId).terminate('test');

    expect((await send('after')).stop_reason.stop_reason).toBe('end_turn');
    expect(await h.client.runs.retrieve(stuck.id)).toMatchObject({ status: 'failed', stop_reason: 'error' });
  });
});

describe('queued messages across a kill -9 of the server', () => {
  let schema: TestSchema;
  let stub: OpenAiStub;
  let dataDir: string;
  let server: StartedProcess | undefined;

  beforeAll(async () => {
    schema = await createTestSchema();
    stub = await startOpenAiStub();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ordering-'));
  });
  afterAll(async () => {
    if (server) await killProcess(server, 'SIGKILL');
    await stub.close();
    await schema.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses none and keeps their order', async () => {
    const env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: testTemporalAddress(),
      openAiBaseUrl: stub.baseURL,
      extra: { ACTIVITY_HEARTBEAT_TIMEOUT_MS: '2000' },
    });
    server = await startApiProcess(env, 'all');
    const client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 });
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini' });
    stub.setDefault((request) => ({ text: `reply to ${lastUserText(request)}`, delayMs: 700 }));
    const runs = [];
    for (let i = 0; i < 5; i++) {
      runs.push(
        await client.agents.messages.createAsync(agent.id, {
          messages: [{ role: 'user', content: `q${i}` }],
        }),
      );
    }
    await eventually(
      async () => stub.requests.length,
      (n) => n > 0,
    );
    await killProcess(server, 'SIGKILL');
    server = await startApiProcess(env, 'all');

    for (const run of runs) {
      const done = await eventually(
        () => client.runs.retrieve(run.id),
        (current) => current.status === 'completed',
        60_000,
      );
      expect(done.status).toBe('completed');
    }
    const history = (await client.agents.messages.list(agent.id, { order: 'asc', limit: 100 }))
      .getPaginatedItems()
      .filter((m) => m.message_type !== 'system_message')
      .map((m) => (m as { content?: unknown }).content);
    expect(history).toEqual([
      'q0',
      'reply to q0',
      'q1',
      'reply to q1',
      'q2',
      'reply to q2',
      'q3',
      'reply to q3',
      'q4',
      'reply to q4',
    ]);
  });
});

describe('two deployments on one Temporal namespace', () => {
  let stub: OpenAiStub;
  let servers: TestServer[] = [];

  beforeAll(async () => {
    stub = await startOpenAiStub();
    // The same queue prefix, as two installations left at their defaults would have: only their
    // deployment ids, kept in their own databases, tell their queues apart.
    const env = { OPENAI_BASE_URL: stub.baseURL, OPENAI_API_KEY: 'test-key', TASK_QUEUE_PREFIX: '' };
    servers = [await startTestServer(env), await startTestServer(env)];
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stopAll()));
    await stub.close();
  });

  it('never take each other’s turns: each runs its own agents against its own database', async () => {
    const clients = servers.map((s) => new Letta({ baseURL: s.url, apiKey: 'unused', maxRetries: 0 }));
    stub.setDefault((request) => ({ text: `reply to ${lastUserText(request)}` }));
    const agents = await Promise.all(
      clients.flatMap((client) => [0, 1, 2].map(() => client.agents.create({ model: 'openai/gpt-4o-mini' }))),
    );
    const responses = await Promise.all(
      agents.flatMap((agent, i) =>
        [0, 1].map((n) =>
          clients[Math.floor(i / 3)].agents.messages.create(agent.id, {
            messages: [{ role: 'user', content: `agent ${i} message ${n}` }],
          }),
        ),
      ),
    );
    responses.forEach((response, j) => {
      expect(response.stop_reason.stop_reason).toBe('end_turn');
      expect(response.messages.at(-1)).toMatchObject({
        content: `reply to agent ${Math.floor(j / 2)} message ${j % 2}`,
      });
    });
  });
});
