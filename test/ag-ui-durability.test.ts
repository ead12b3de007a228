/**
 * An AG-UI interrupt outlives the server: the server (`npm start`'s process: API and workers) runs as a
 * process of its own beside a second API process, on a Temporal dev server and PostgreSQL of the
 * test's. A stream in flight at a graceful stop (SIGTERM, a deploy) ends saying how to join the run
 * again. A frontend's run pauses on an approval; the server is killed with SIGKILL and started again,
 * and the frontend's resume goes on with the same turn; another pause is resumed through the second
 * API process, which shares nothing with the first but the database and Temporal (a frontend tool's
 * result too, sent there while the server is down); an MCP server's
 * question (an elicitation) is an interrupt too, whose resume reaches the server. Last, the same on the
 * server's defaults, as `npm start` runs it: a frontend tool's pause outlives a kill -9 of its process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import Letta from '@letta-ai/letta-client';
import { HttpAgent, type Interrupt } from '@ag-ui/client';
import type { RunningDevServer } from '../src/temporal/dev-server';
import { startOpenAiStub, type OpenAiStub } from './helpers/openai-stub';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { processesMentioning, startProcess, waitForStatus, type StartedProcess } from './helpers/process';
import { apiUrl, killProcess, serverProcessEnv, startApiProcess } from './helpers/server-processes';
import { freePort, freePortBelowEphemeral } from './helpers/env';
import { startTemporalServer } from './helpers/temporal-server';
import { startElicitServer } from './helpers/mcp-servers';
import { eventually } from './helpers/eventually';

const PASSWORD = 'ag-ui-durable-password';

describe('an AG-UI interrupt across a kill -9 of the server and a second API process', () => {
  let dataDir: string;
  let schema: TestSchema;
  let stub: OpenAiStub;
  let temporal: RunningDevServer;
  let env: Record<string, string>;
  let secondEnv: Record<string, string>;
  let server: StartedProcess;
  let secondApi: StartedProcess;
  let agentId: string;
  let elicit: Awaited<ReturnType<typeof startElicitServer>>;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-ag-ui-'));
    elicit = await startElicitServer();
    schema = await createTestSchema();
    stub = await startOpenAiStub();
    ({ server: temporal } = await startTemporalServer(dataDir));
    env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: temporal.address,
      openAiBaseUrl: stub.baseURL,
      // The MCP server that asks questions listens on loopback, which an operator allows.
      // A deploy's grace, short: a stream in flight is ended a second before it runs out.
      extra: {
        LETTA_SERVER_PASSWORD: PASSWORD,
        OUTBOUND_ALLOW_PRIVATE: '127.0.0.1',
        SHUTDOWN_GRACE_MS: '3000',
      },
    });
    secondEnv = { ...env, PORT: String(await freePort()) };
    server = await startApiProcess(env, 'all');
    secondApi = await startApiProcess(secondEnv, 'api');
    const client = new Letta({ baseURL: apiUrl(env), apiKey: PASSWORD, maxRetries: 0 });
    const agent = await client.agents.create({
      name: 'ag-ui-durable',
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Carol' }],
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    });
    agentId = agent.id;
  });
  afterAll(async () => {
    if (server) await killProcess(server, 'SIGKILL');
    if (secondApi) await killProcess(secondApi, 'SIGKILL');
    if (elicit) await killProcess(elicit.process, 'SIGKILL');
    await temporal?.stop();
    await stub?.close();
    await schema?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const frontendOn = (processEnv: Record<string, string>, threadId: string) =>
    new HttpAgent({
      url: `${apiUrl(processEnv)}/v1/ag-ui/agents/${agentId}`,
      headers: { Authorization: `Bearer ${PASSWORD}` },
      threadId,
    });

  /** Runs `agent` with a new message; the model asks to remember `fact`, which waits for approval. */
  async function pauseOn(agent: HttpAgent, fact: string): Promise<Interrupt> {
    stub.enqueue(
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_string: fact } }] },
      { text: `Remembered: ${fact}` },
    );
    agent.addMessage({ id: randomUUID(), role: 'user', content: `remember ${fact}` });
    let interrupts: Interrupt[] = [];
    await agent.runAgent(
      {},
      {
        onRunFinishedEvent: (params) =>
          void (interrupts = params.outcome === 'interrupt' ? params.interrupts : []),
      },
    );
    expect(interrupts).toHaveLength(1);
    return interrupts[0];
  }

  const approve = (agent: HttpAgent, interrupt: Interrupt) =>
    agent.runAgent({
      resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { approve: true } }],
    });

  const memoryOf = (agent: HttpAgent) => (agent.state as { memory: Record<string, string> }).memory.human;

  it('resumes the same turn after the server was killed with SIGKILL and started again', async () => {
    const threadId = randomUUID();
    const before = frontendOn(env, threadId);
    const interrupt = await pauseOn(before, 'Likes jazz.');

    await killProcess(server, 'SIGKILL');
    server = await startApiProcess(env, 'all');

    // The frontend's tab survived; it sends its resume to the server that came back.
    const result = await approve(before, interrupt);
    expect(result.newMessages.find((m) => m.role === 'assistant')?.content).toBe('Remembered: Likes jazz.');
    expect(memoryOf(before)).toContain('Likes jazz.');
  });

  it('ends a stream at a graceful stop with SERVER_STOPPING, and the same run id joins the run after the restart', async () => {
    let release!: () => void;
    stub.enqueue(
      { text: 'cut by the deploy', heldUntil: new Promise<void>((resolve) => (release = resolve)) },
      { text: 'Finished after the deploy' },
    );
    const threadId = randomUUID();
    const runId = randomUUID();
    const before = frontendOn(env, threadId);
    before.addMessage({ id: randomUUID(), role: 'user', content: 'outlive the deploy' });
    const errors: { code?: string; message: string }[] = [];
    const streaming = before
      .runAgent({ runId }, { onRunErrorEvent: ({ event }) => void errors.push(event) })
      .catch(() => undefined);
    await eventually(
      async () => String(stub.requests.at(-1)?.messages.at(-1)?.content),
      (content) => content.includes('outlive the deploy'),
    );
    await killProcess(server, 'SIGTERM');
    await streaming;
    release();
    expect(errors).toEqual([expect.objectContaining({ code: 'SERVER_STOPPING' })]);

    server = await startApiProcess(env, 'all');
    const after = frontendOn(env, threadId);
    await after.runAgent({ runId });
    expect(after.messages.map((m) => m.content)).toEqual(['outlive the deploy', 'Finished after the deploy']);
  });

  it('takes a resume on a second API process', async () => {
    const threadId = randomUUID();
    const first = frontendOn(env, threadId);
    const interrupt = await pauseOn(first, 'Likes tea.');

    // A reloaded page, behind the load balancer's other process: it loads the thread, then resumes.
    const second = frontendOn(secondEnv, threadId);
    let pending: Interrupt[] = [];
    await second.runAgent(
      {},
      {
        onRunFinishedEvent: (params) =>
          void (pending = params.outcome === 'interrupt' ? params.interrupts : []),
      },
    );
    expect(pending.map((i) => i.id)).toEqual([interrupt.id]);
    const result = await approve(second, interrupt);
    expect(result.newMessages.find((m) => m.role === 'assistant')?.content).toBe('Remembered: Likes tea.');
    expect(second.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(memoryOf(second)).toContain('Likes tea.');
  });

  it("takes a frontend tool's result on the second API process after the server was killed", async () => {
    const lookup = {
      name: 'read_clipboard',
      description: 'Reads what the user copied',
      parameters: { type: 'object', properties: {} },
    };
    stub.enqueue({ toolCalls: [{ name: lookup.name, arguments: {} }] }, (request) => ({
      text: `You copied: ${String(request.messages.at(-1)?.content)}`,
    }));
    const threadId = randomUUID();
    const first = frontendOn(env, threadId);
    first.addMessage({ id: randomUUID(), role: 'user', content: 'what did I copy?' });
    let pending: string[] = [];
    await first.runAgent(
      { tools: [lookup] },
      {
        onRunFinishedEvent: (params) =>
          void (pending = params.outcome === 'success' ? params.pendingToolCallIds : []),
      },
    );
    expect(pending).toHaveLength(1);

    await killProcess(server, 'SIGKILL');
    // The tab sends the tool's result to the other API process while the server is down.
    const second = frontendOn(secondEnv, threadId);
    second.setMessages(first.messages);
    second.addMessage({
      id: randomUUID(),
      role: 'tool',
      toolCallId: pending[0],
      content: 'a recipe for soup',
    });
    const answered = second.runAgent({ tools: [lookup] });
    server = await startApiProcess(env, 'all');
    const result = await answered;
    expect(String(result.newMessages.find((m) => m.role === 'assistant')?.content)).toContain(
      '"message": "a recipe for soup"',
    );
  });

  it("surfaces an MCP server's question as an interrupt, whose resume answers the server", async () => {
    const client = new Letta({ baseURL: apiUrl(env), apiKey: PASSWORD, maxRetries: 0 });
    const registered = await client.mcpServers.create({
      server_name: 'booking',
      config: { mcp_server_type: 'streamable_http', server_url: elicit.url },
    });
    const tools = await client.mcpServers.tools.list(registered.id!);
    const booker = await client.agents.create({
      model: 'openai/gpt-4o-mini',
      tool_ids: [tools.find((tool) => tool.name === 'book_table')!.id!],
    });
    const agent = new HttpAgent({
      url: `${apiUrl(secondEnv)}/v1/ag-ui/agents/${booker.id}`,
      headers: { Authorization: `Bearer ${PASSWORD}` },
      threadId: randomUUID(),
    });
    stub.enqueue({ toolCalls: [{ name: 'book_table', arguments: {} }] }, (request) => ({
      text: `tool said: ${String(request.messages.at(-1)?.content)}`,
    }));
    agent.addMessage({ id: randomUUID(), role: 'user', content: 'Book me a table.' });
    let interrupts: Interrupt[] = [];
    await agent.runAgent(
      {},
      {
        onRunFinishedEvent: (params) =>
          void (interrupts = params.outcome === 'interrupt' ? params.interrupts : []),
      },
    );
    expect(interrupts).toEqual([
      expect.objectContaining({ reason: 'mcp_elicitation', message: 'Who is the table for?' }),
    ]);
    expect(Object.keys((interrupts[0].responseSchema as { properties: object }).properties)).toEqual([
      'name',
      'guests',
      'seating',
      'extras',
    ]);
    const before = (await elicit.answers()).length;
    const content = { name: 'Ada', guests: 4, seating: 'terrace', extras: ['cake'] };
    const result = await agent.runAgent({
      resume: [{ interruptId: interrupts[0].id, status: 'resolved', payload: content }],
    });
    expect((await elicit.answers()).slice(before)).toEqual([{ action: 'accept', content }]);
    expect(String(result.newMessages.find((m) => m.role === 'assistant')?.content)).toContain('booked:');
  });
});

describe("on the server's defaults (PGlite, the embedded Temporal, no password)", () => {
  let dataDir: string;
  let stub: OpenAiStub;
  let env: Record<string, string>;
  let server: StartedProcess;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-ag-ui-defaults-'));
    stub = await startOpenAiStub();
    env = {
      DATA_DIR: dataDir,
      OPENAI_BASE_URL: stub.baseURL,
      OPENAI_API_KEY: 'test-key',
      PORT: String(await freePortBelowEphemeral()),
      TEMPORAL_PORT: String(await freePortBelowEphemeral()),
      TEMPORAL_UI_PORT: String(await freePortBelowEphemeral()),
    };
    server = await startDefaultServer(env);
  });
  afterAll(async () => {
    if (server) await killProcess(server, 'SIGTERM');
    for (const pid of processesMentioning(dataDir)) process.kill(pid, 'SIGKILL');
    await stub?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('resumes a frontend tool’s pause after a kill -9 of `npm start`’s process', async () => {
    const url = `http://127.0.0.1:${env.PORT}`;
    const client = new Letta({ baseURL: url, apiKey: 'unused', maxRetries: 0 });
    const { id } = await client.agents.create({ model: 'openai/gpt-4o-mini' });
    const tool = {
      name: 'ask_user',
      description: 'Asks the user',
      parameters: { type: 'object', properties: {} },
    };
    stub.enqueue({ toolCalls: [{ name: tool.name, arguments: {} }] }, { text: 'Thanks for answering.' });
    const agent = new HttpAgent({ url: `${url}/v1/ag-ui/agents/${id}`, threadId: randomUUID() });
    agent.addMessage({ id: randomUUID(), role: 'user', content: 'ask me something' });
    let pending: string[] = [];
    await agent.runAgent(
      { tools: [tool] },
      {
        onRunFinishedEvent: (params) =>
          void (pending = params.outcome === 'success' ? params.pendingToolCallIds : []),
      },
    );
    expect(pending).toHaveLength(1);

    await killProcess(server, 'SIGKILL');
    server = await startDefaultServer(env);

    agent.addMessage({ id: randomUUID(), role: 'tool', toolCallId: pending[0], content: 'blue' });
    const result = await agent.runAgent({ tools: [tool] });
    expect(result.newMessages.find((m) => m.role === 'assistant')?.content).toBe('Thanks for answering.');
  });
});

/** `npm start`'s process as built (node dist/src/main.js): every role, PGlite, its own Temporal. */
async function startDefaultServer(env: Record<string, string>): Promise<StartedProcess> {
  const proc = startProcess('node', ['dist/src/main.js'], env);
  await waitForStatus(`http://127.0.0.1:${env.PORT}/v1/health/`, 200, proc, 120_000);
  return proc;
}
