/**
 * The AG-UI endpoint driven by AG-UI's own client (`@ag-ui/client`'s HttpAgent) on the real server: a
 * plain run, a frontend tool answered, memory edits as state deltas, a run cancelled, a dropped stream
 * joined again, a thread loaded from scratch, and what a frontend gets for input it should not send.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import Letta from '@letta-ai/letta-client';
import {
  HttpAgent,
  type AgentSubscriber,
  type BaseEvent,
  type Message,
  type RunAgentInput,
} from '@ag-ui/client';
import { EventType } from '@ag-ui/core';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';
import { asFunctionModule, loadModule, typeProblems } from './helpers/doc-code';

const PASSWORD = 'ag-ui-password';

/** A frontend tool, as CopilotKit declares one. */
const SET_COLOR = {
  name: 'set_theme_color',
  description: 'Sets the page accent colour',
  parameters: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
};

/** Every event a run delivers to its subscriber, in order. */
function recorder() {
  const events: BaseEvent[] = [];
  const subscriber: AgentSubscriber = { onEvent: ({ event }) => void events.push(event) };
  return { events, subscriber, types: () => events.map((event) => event.type) };
}

describe('the AG-UI endpoint', () => {
  const h = useAgentServer('openai', { LETTA_SERVER_PASSWORD: PASSWORD });
  let agentId: string;
  const endpoint = () => `${h.server.url}/v1/ag-ui/agents/${agentId}`;
  const frontend = (threadId = randomUUID(), initialMessages: Message[] = []) =>
    new HttpAgent({
      url: endpoint(),
      headers: { Authorization: `Bearer ${PASSWORD}` },
      threadId,
      initialMessages,
    });
  /** A frontend of a new agent whose memory edits wait for approval. */
  const guardedFrontend = async (name: string, human: string) => {
    const client = new Letta({ baseURL: h.server.url, apiKey: PASSWORD, maxRetries: 0 });
    const guarded = await client.agents.create({
      name,
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: human }],
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    });
    const agent = new HttpAgent({
      url: `${h.server.url}/v1/ag-ui/agents/${guarded.id}`,
      headers: { Authorization: `Bearer ${PASSWORD}` },
      threadId: randomUUID(),
    });
    return { guarded, agent };
  };
  /** The model's next reply is `text`, held until the returned function lets it go. */
  const holdReply = (text: string) => {
    let release!: () => void;
    h.stub.enqueue({ text, heldUntil: new Promise<void>((resolve) => (release = resolve)) });
    return () => release();
  };
  const say = (agent: HttpAgent, content: string) =>
    agent.addMessage({ id: randomUUID(), role: 'user', content });

  beforeAll(async () => {
    const client = new Letta({ baseURL: h.server.url, apiKey: PASSWORD, maxRetries: 0 });
    const agent = await client.agents.create({
      name: 'ag-ui-agent',
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
    });
    agentId = agent.id;
  });

  it('streams a plain run as text deltas between RUN_STARTED and RUN_FINISHED', async () => {
    h.stub.enqueue({ text: 'Hello from a durable agent' });
    const agent = frontend();
    say(agent, 'hi');
    const run = recorder();
    const result = await agent.runAgent({}, run.subscriber);
    const types = run.types();
    expect(types[0]).toBe(EventType.RUN_STARTED);
    expect(types.at(-1)).toBe(EventType.RUN_FINISHED);
    expect(types).toEqual(
      expect.arrayContaining([
        EventType.STATE_SNAPSHOT,
        EventType.STEP_STARTED,
        EventType.TEXT_MESSAGE_START,
        EventType.TEXT_MESSAGE_CONTENT,
        EventType.TEXT_MESSAGE_END,
        EventType.STEP_FINISHED,
      ]),
    );
    const reply = result.newMessages.find((m) => m.role === 'assistant');
    expect(reply?.content).toBe('Hello from a durable agent');
    const snapshot = run.events.find((e) => e.type === EventType.STATE_SNAPSHOT) as unknown as {
      snapshot: { memory: Record<string, string> };
    };
    expect(snapshot.snapshot.memory.human).toBe('Name: Alice');
    // The model saw the user's message once, in the thread's own conversation.
    const request = h.stub.requests.at(-1)!;
    expect(
      request.messages.filter((m) => m.role === 'user' && String(m.content).includes('hi')),
    ).toHaveLength(1);
  });

  it('speaks AG-UI’s protobuf framing to a client that asks for it', async () => {
    /** AG-UI's client, asking for the binary framing its transport also reads. */
    class ProtobufAgent extends HttpAgent {
      protected override requestInit(input: RunAgentInput): RequestInit {
        const init = super.requestInit(input);
        return { ...init, headers: { ...(init.headers as Record<string, string>), Accept: PROTO } };
      }
    }
    const PROTO = 'application/vnd.ag-ui.event+proto';
    let contentType: string | null = null;
    const agent = new ProtobufAgent({
      url: endpoint(),
      headers: { Authorization: `Bearer ${PASSWORD}` },
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        contentType = response.headers.get('content-type');
        return response;
      },
    });
    h.stub.enqueue({ text: 'Binary hello' });
    say(agent, 'hi in bytes');
    const result = await agent.runAgent();
    expect(contentType).toBe(PROTO);
    expect(result.newMessages.find((m) => m.role === 'assistant')?.content).toBe('Binary hello');
  });

  it('pauses on a frontend tool and resumes when the next run brings its result', async () => {
    h.stub.enqueue(
      { toolCalls: [{ name: SET_COLOR.name, arguments: { color: 'teal' } }] },
      { text: 'Teal it is' },
    );
    const agent = frontend();
    say(agent, 'make it teal');
    const first = recorder();
    let finished: unknown;
    await agent.runAgent(
      { tools: [SET_COLOR] },
      {
        ...first.subscriber,
        onRunFinishedEvent: (params) => void (finished = params),
      },
    );
    expect(first.types()).toEqual(
      expect.arrayContaining([EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END]),
    );
    const call = agent.messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []))[0];
    expect(call.function.name).toBe(SET_COLOR.name);
    expect(JSON.parse(call.function.arguments)).toEqual({ color: 'teal' });
    expect(finished).toMatchObject({ outcome: 'success', pendingToolCallIds: [call.id] });

    agent.addMessage({
      id: randomUUID(),
      role: 'tool',
      toolCallId: call.id,
      content: 'the page is teal now',
    });
    const second = recorder();
    const result = await agent.runAgent({ tools: [SET_COLOR] }, second.subscriber);
    expect(result.newMessages.find((m) => m.role === 'assistant')?.content).toBe('Teal it is');
    // The frontend's own result is not sent back to it.
    expect(agent.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
    // The model got the frontend's result as the call's return.
    const toolMessage = h.stub.requests.at(-1)!.messages.find((m) => m.role === 'tool');
    expect(String(toolMessage?.content)).toContain('the page is teal now');
  });

  it('sends memory edits as state deltas', async () => {
    h.stub.enqueue(
      {
        toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_string: 'Likes teal.' } }],
      },
      { text: 'Noted' },
    );
    const agent = frontend();
    say(agent, 'remember I like teal');
    const run = recorder();
    await agent.runAgent({}, run.subscriber);
    expect(run.types()).toContain(EventType.STATE_DELTA);
    expect((agent.state as { memory: Record<string, string> }).memory.human).toContain('Likes teal.');
    expect(run.types()).toEqual(expect.arrayContaining([EventType.TOOL_CALL_RESULT]));
  });

  it('shows a run’s context entries to the model, in the system message only', async () => {
    h.stub.enqueue({ text: 'You are on the pricing page' });
    const agent = frontend();
    say(agent, 'where am I?');
    await agent.runAgent({ context: [{ description: 'current page', value: '/pricing' }] });
    const system = String(h.stub.requests.at(-1)!.messages[0].content);
    expect(system).toContain('<context description="current page">/pricing</context>');
  });

  it('ends a run that waits for approval with an interrupt, and a resume answers it with edited arguments', async () => {
    const { guarded, agent } = await guardedFrontend('ag-ui-guarded', 'Name: Bob');
    h.stub.enqueue(
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_string: 'Likes red.' } }] },
      { text: 'Saved' },
    );
    say(agent, 'remember I like red');
    let finished: {
      outcome: string;
      interrupts?: { id: string; reason: string; toolCallId?: string; metadata?: Record<string, unknown> }[];
    } = { outcome: '' };
    await agent.runAgent({}, { onRunFinishedEvent: (params) => void (finished = params as typeof finished) });
    expect(finished.outcome).toBe('interrupt');
    const [interrupt] = finished.interrupts!;
    expect(interrupt.reason).toBe('tool_approval');
    expect(interrupt.id).toBe(interrupt.toolCallId);
    // The same pause is in the approval inbox.
    const inbox = await fetch(`${h.server.url}/v1/approvals/?agent_id=${guarded.id}`, {
      headers: { authorization: `Bearer ${PASSWORD}` },
    }).then((r) => r.json() as Promise<{ tool_call_id: string }[]>);
    expect(inbox.map((item) => item.tool_call_id)).toEqual([interrupt.id]);

    const resumed = recorder();
    const result = await agent.runAgent(
      {
        resume: [
          {
            interruptId: interrupt.id,
            status: 'resolved',
            payload: { approve: true, arguments: { label: 'human', new_string: 'Likes crimson.' } },
          },
        ],
      },
      resumed.subscriber,
    );
    expect(result.newMessages.find((m) => m.role === 'assistant')?.content).toBe('Saved');
    expect((agent.state as { memory: Record<string, string> }).memory.human).toContain('Likes crimson.');
    const record = await fetch(
      `${h.server.url}/v1/approvals/${String(interrupt.metadata!.approval_request_id)}`,
      {
        headers: { authorization: `Bearer ${PASSWORD}` },
      },
    );
    expect(record.status).toBe(200);
    expect(await record.json()).toMatchObject({
      status: 'answered',
      answered_by: { kind: 'password' },
      tool_calls: [{ decision: 'approved', edited_arguments: expect.stringContaining('crimson') }],
    });

    // A resume for what no longer waits is a RUN_ERROR that says so.
    const late = recorder();
    await agent
      .runAgent({ resume: [{ interruptId: interrupt.id, status: 'resolved' }] }, late.subscriber)
      .catch(() => undefined);
    const error = late.events.find((e) => e.type === EventType.RUN_ERROR) as unknown as { message: string };
    expect(error.message).toMatch(/already answered|No tool call is currently awaiting approval/);
  });

  it('streams the model’s reasoning as REASONING events before its text', async () => {
    h.stub.enqueue({ text: 'Blue.', reasoning: 'The user asked for a colour; blue is calm.' });
    const agent = frontend();
    say(agent, 'pick a colour');
    const run = recorder();
    await agent.runAgent({}, run.subscriber);
    const types = run.types();
    const reasoning = types.indexOf(EventType.REASONING_MESSAGE_START);
    expect(reasoning).toBeGreaterThan(0);
    expect(reasoning).toBeLessThan(types.indexOf(EventType.TEXT_MESSAGE_START));
    expect(agent.messages.find((m) => m.role === 'reasoning')?.content).toBe(
      'The user asked for a colour; blue is calm.',
    );
  });

  it('denies a call whose interrupt is cancelled, and the model reads the reason', async () => {
    const { agent } = await guardedFrontend('ag-ui-denied', 'Name: Dan');
    h.stub.enqueue(
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_string: 'Hates Mondays.' } }] },
      { text: 'Understood, I will not.' },
    );
    say(agent, 'remember that I hate Mondays');
    let interruptId = '';
    await agent.runAgent(
      {},
      {
        onRunFinishedEvent: (params) =>
          void (interruptId = params.outcome === 'interrupt' ? params.interrupts[0].id : ''),
      },
    );
    // A resume entry for an interrupt that is not waiting is refused, and the pause stays.
    const stale = recorder();
    await agent
      .runAgent(
        {
          resume: [
            { interruptId, status: 'cancelled' },
            { interruptId: 'call-long-gone', status: 'resolved' },
          ],
        },
        stale.subscriber,
      )
      .catch(() => undefined);
    expect(stale.events.find((e) => e.type === EventType.RUN_ERROR)).toMatchObject({
      code: '409',
      message: expect.stringContaining('call-long-gone'),
    });
    await agent.runAgent({
      resume: [{ interruptId, status: 'cancelled', payload: { reason: 'not something to keep' } }],
    });
    const denial = h.stub.requests.at(-1)!.messages.find((m) => m.role === 'tool');
    expect(String(denial?.content)).toContain('User reason: not something to keep');
    expect((agent.state as { memory: Record<string, string> }).memory.human).toBe('Name: Dan');
  });

  it('honours forwardedProps.max_steps', async () => {
    h.stub.setDefault(() => ({ toolCalls: [{ name: 'conversation_search', arguments: { query: 'x' } }] }));
    const agent = frontend();
    say(agent, 'search forever');
    let result: unknown;
    try {
      await agent.runAgent(
        { forwardedProps: { max_steps: 2 } },
        { onRunFinishedEvent: ({ event }) => void (result = event.result) },
      );
    } finally {
      h.stub.setDefault(() => ({ text: 'ok' }));
    }
    expect(result).toMatchObject({ stop_reason: 'max_steps' });
  });

  it('joins a dropped run when the same run id comes again, with the thread up to it as a snapshot', async () => {
    const release = holdReply('Worth the wait');
    const threadId = randomUUID();
    const first = frontend(threadId);
    say(first, 'take your time');
    const runId = randomUUID();
    const dropped = first.runAgent({ runId }, { onRunStartedEvent: () => void first.abortRun() });
    await dropped.catch(() => undefined);
    // The turn goes on without its stream: the model is asked, and holds its reply.
    await eventually(
      async () => String(h.stub.requests.at(-1)?.messages.at(-1)?.content),
      (content) => content.includes('take your time'),
    );
    const requestsBefore = h.stub.requests.length;

    // Another tab, with nothing of the thread, sends the same run id: it gets the thread so far, then the run.
    const second = frontend(threadId);
    const joined = recorder();
    const result = second.runAgent({ runId }, joined.subscriber);
    await eventually(
      async () => joined.types(),
      (types) => types.includes(EventType.MESSAGES_SNAPSHOT),
    );
    release();
    await result;
    expect(joined.types().filter((type) => type === EventType.RUN_FINISHED)).toHaveLength(1);
    const texts = second.messages.map((m) => (typeof m.content === 'string' ? m.content : ''));
    expect(texts).toEqual(['take your time', 'Worth the wait']);
    expect(second.messages[0].id).toBe(first.messages[0].id);
    // One turn: the model was asked once.
    expect(h.stub.requests.length).toBe(requestsBefore);
  });

  it('loads a thread from scratch: a run with no messages gets its history and starts nothing', async () => {
    h.stub.enqueue({ text: 'First answer' });
    const threadId = randomUUID();
    const agent = frontend(threadId);
    say(agent, 'first question');
    await agent.runAgent();
    const requests = h.stub.requests.length;

    const reloaded = frontend(threadId);
    const run = recorder();
    await reloaded.runAgent({}, run.subscriber);
    expect(run.types()).toEqual([
      EventType.RUN_STARTED,
      EventType.MESSAGES_SNAPSHOT,
      EventType.STATE_SNAPSHOT,
      EventType.RUN_FINISHED,
    ]);
    expect(reloaded.messages.map((m) => [m.id, m.role, m.content])).toEqual(
      agent.messages.map((m) => [m.id, m.role, m.content]),
    );
    expect(h.stub.requests.length).toBe(requests);
  });

  it('cancels a thread’s run: its stream ends with the cancelled outcome', async () => {
    const release = holdReply('never shown');
    const threadId = randomUUID();
    const agent = frontend(threadId);
    say(agent, 'a long job');
    let outcome: string | undefined;
    const running = agent.runAgent({}, { onRunFinishedEvent: (params) => void (outcome = params.outcome) });
    await eventually(
      async () => String(h.stub.requests.at(-1)?.messages.at(-1)?.content),
      (content) => content.includes('a long job'),
    );
    const cancel = await fetch(`${endpoint()}/threads/${threadId}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${PASSWORD}` },
    });
    expect(cancel.status).toBe(200);
    expect(Object.values((await cancel.json()) as Record<string, string>)).toEqual(['cancelled']);
    await running;
    release();
    expect(outcome).toBe('cancelled');
  });

  it('answers what a frontend should not send with clear errors', async () => {
    const post = (path: string, body: unknown, token = PASSWORD) =>
      fetch(`${h.server.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const valid = { threadId: randomUUID(), runId: randomUUID(), messages: [] };
    const invalid = await post(`/v1/ag-ui/agents/${agentId}`, { threadId: 1, messages: 'no' });
    expect(invalid.status).toBe(422);
    expect(((await invalid.json()) as { detail: { loc: string[] }[] }).detail[0].loc[0]).toBe('body');
    expect((await post('/v1/ag-ui/agents/agent-00000000-0000-4000-8000-000000000000', valid)).status).toBe(
      404,
    );
    // Ids the server keeps, and frontend tools as client tools, have limits AG-UI's schema leaves open.
    expect((await post(`/v1/ag-ui/agents/${agentId}`, { ...valid, threadId: 'x'.repeat(257) })).status).toBe(
      422,
    );
    const oddTool = { ...valid, tools: [{ name: 'odd', description: 'd', parameters: 'not a schema' }] };
    expect((await post(`/v1/ag-ui/agents/${agentId}`, oddTool)).status).toBe(422);
    expect((await post(`/v1/ag-ui/agents/${agentId}`, valid, 'wrong')).status).toBe(401);
    const tooMuch = { ...valid, context: [{ description: 'page', value: 'x'.repeat(70_000) }] };
    expect((await post(`/v1/ag-ui/agents/${agentId}`, tooMuch)).status).toBe(400);
    expect((await post(`/v1/ag-ui/agents/${agentId}/threads/${randomUUID()}/cancel`, {})).status).toBe(404);

    // A scoped token reaches its own agent's AG-UI runs only.
    const client = new Letta({ baseURL: h.server.url, apiKey: PASSWORD, maxRetries: 0 });
    const other = await client.agents.create({ name: 'ag-ui-other', model: 'openai/gpt-4o-mini' });
    const { token } = await client.accessTokens.create({
      hostname: 'https://app.example.com',
      policy: [{ type: 'agent', id: agentId, access: ['read_messages', 'write_messages'] }],
    });
    expect((await post(`/v1/ag-ui/agents/${other.id}`, valid, token)).status).toBe(403);
    const mine = await post(`/v1/ag-ui/agents/${agentId}`, valid, token);
    expect(mine.status).toBe(200);
    expect(await mine.text()).toContain('"type":"RUN_FINISHED"');

    // A thread naming another agent's conversation is refused in the stream, which still ends properly.
    const conversation = await client.conversations.create({ agent_id: other.id });
    const stolen = await post(`/v1/ag-ui/agents/${agentId}`, { ...valid, threadId: conversation.id });
    const text = await stolen.text();
    expect(text).toContain('"type":"RUN_STARTED"');
    expect(text).toMatch(
      /"type":"RUN_ERROR","message":"Conversation conv-[^"]* not found","code":"not_found"/,
    );
  });

  describe("docs/using-it.md's AG-UI example", () => {
    const block = /^<!-- ag-ui-example -->\n\n```ts\n([\s\S]*?)^```$/m.exec(
      fs.readFileSync(path.join(__dirname, '..', 'docs', 'using-it.md'), 'utf8'),
    );
    const source = asFunctionModule(block![1], 'example', 'agentId: string');

    it('type-checks against the published @ag-ui/client', () => {
      expect(typeProblems(source)).toEqual([]);
    });

    it('runs as written: the frontend tool is answered and the turn ends with the reply', async () => {
      const { example } = loadModule<{ example: (agentId: string) => Promise<void> }>(
        source.replaceAll('http://127.0.0.1:8283', h.server.url),
      );
      h.stub.enqueue(
        { toolCalls: [{ name: SET_COLOR.name, arguments: { color: 'teal' } }] },
        { text: 'The page is teal now.' },
      );
      let printed = '';
      const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        printed += String(chunk);
        return true;
      });
      process.env.LETTA_SERVER_PASSWORD = PASSWORD;
      try {
        await example!(agentId);
      } finally {
        write.mockRestore();
        delete process.env.LETTA_SERVER_PASSWORD;
      }
      expect(printed).toBe('The page is teal now.');
      const toolMessage = h.stub.requests.at(-1)!.messages.find((m) => m.role === 'tool');
      expect(String(toolMessage?.content)).toContain('the page is teal');
    });
  });
});
