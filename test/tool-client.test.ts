/**
 * Letta's `client` in a sandboxed tool: the official client (`letta_client` from PyPI, or
 * `@letta-ai/letta-client` from npm, installed as the tool's or its sandbox config's requirement) built
 * from LETTA_API_KEY and LETTA_BASE_URL, as Letta's sandbox preamble builds it; None / null where the
 * library is not installed. The key is a token of the call's own (src/access/tool-api-access.ts); the
 * local sandbox has no network, and reaches the API through its bridge (api_bridge.py) alone.
 */
import Letta from '@letta-ai/letta-client';
import os from 'node:os';
import pino from 'pino';
import { useAgentServer } from './helpers/agent-server';
import { startOpenAiStub, type OpenAiStub } from './helpers/openai-stub';
import { freePort, silentLogger, testConfig, testTemporalAddress, uniqueSuffix } from './helpers/env';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { startServer, type RunningServer } from '../src/server';
import { connectTemporalClient, finishedTurnHistory, turnWorkflowId } from './helpers/temporal';

/** A Python tool's source from its lines (the function's body indented by the caller). */
const python = (...lines: string[]) => `${lines.join('\n')}\n`;

/** A TypeScript tool using the official client, its string parameters named in `params`. */
const typescriptTool = (name: string, description: string, params: string[], ...lines: string[]) => ({
  source_code: `${lines.join('\n')}\n`,
  source_type: 'typescript',
  json_schema: {
    name,
    description,
    parameters: {
      type: 'object',
      properties: Object.fromEntries(params.map((p) => [p, { type: 'string' }])),
      required: params,
    },
  },
  npm_requirements: [{ name: '@letta-ai/letta-client' }],
});

/** The first tool return among a response's messages. */
const toolReturnOf = (messages: { message_type?: string }[]) =>
  messages.find((m) => m.message_type === 'tool_return_message') as { status: string; tool_return: string };

/** A new agent of `client`'s with these tools; `run` calls one outside a turn (`agents.tools.run`). */
async function agentWithTools(
  client: Letta,
  tools: Letta.ToolUpsertParams[],
  agent: Partial<Letta.AgentCreateParams> = {},
) {
  const toolIds: string[] = [];
  for (const tool of tools) toolIds.push((await client.tools.upsert(tool)).id);
  const created = await client.agents.create({ model: 'openai/gpt-4o-mini', ...agent, tool_ids: toolIds });
  return {
    agent: created,
    run: (name: string, args: Record<string, unknown> = {}) =>
      client.agents.tools.run(name, { agent_id: created.id, args }),
  };
}

describe("a custom tool's Letta client", () => {
  const h = useAgentServer('openai');
  const sandboxConfig = async (body: Record<string, unknown>) => {
    const res = await fetch(`${h.server.url}/v1/sandbox-config/local`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { id: string };
  };

  it('is None without the library, and edits its own agent through the API with it', async () => {
    const source = python(
      'import os',
      '',
      'def remember(fact: str) -> str:',
      '    """Remembers a fact.',
      '',
      '    Args:',
      '        fact: What to remember.',
      '    """',
      '    if client is None:',
      '        return "no client"',
      '    client.agents.blocks.update("human", agent_id=os.environ["LETTA_AGENT_ID"], value=fact)',
      '    return "remembered"',
    );
    const { agent, run } = await agentWithTools(h.client, [{ source_code: source }], {
      memory_blocks: [{ label: 'human', value: 'Nothing yet' }],
    });
    const remember = (fact: string) => run('remember', { fact });
    expect(await remember('Likes tea')).toMatchObject({ status: 'success', func_return: 'no client' });

    await h.client.tools.upsert({ source_code: source, pip_requirements: [{ name: 'letta-client' }] });
    expect(await remember('Likes tea')).toMatchObject({ status: 'success', func_return: 'remembered' });
    expect((await h.client.agents.blocks.retrieve('human', { agent_id: agent.id })).value).toBe('Likes tea');
  }, 120_000);

  it('comes from the sandbox config: its requirements install the client for every tool', async () => {
    const myAgent = python(
      'def my_agent() -> str:',
      '    """Names its agent."""',
      '    return "no client" if client is None else client.agents.retrieve(os.environ["LETTA_AGENT_ID"]).name',
      '',
      'import os',
    );
    const { run } = await agentWithTools(h.client, [{ source_code: myAgent }], { name: 'named' });
    await sandboxConfig({ pip_requirements: [{ name: 'letta-client' }] });
    try {
      expect(await run('my_agent')).toMatchObject({ status: 'success', func_return: 'named' });
    } finally {
      await sandboxConfig({ pip_requirements: [] });
    }
  }, 120_000);

  it("is the official TypeScript client in a TypeScript tool, which lists its own agent's tools and no other's", async () => {
    const listTools = typescriptTool(
      'list_tools',
      "Lists an agent's tools.",
      ['agent_id'],
      'export async function list_tools(agent_id: string): Promise<string> {',
      "  if (client === null) return 'no client';",
      '  try {',
      '    const page = await client.agents.tools.list(agent_id);',
      "    return page.getPaginatedItems().map((t) => t.name).sort().join(',');",
      '  } catch (error) {',
      '    return `refused ${(error as { status?: number }).status}`;',
      '  }',
      '}',
    );
    const { agent, run } = await agentWithTools(h.client, [listTools], { tools: ['memory_insert'] });
    const result = await run('list_tools', { agent_id: agent.id });
    expect(result.status).toBe('success');
    // The agent's tools as the API lists them: its defaults, memory_insert and this tool.
    expect(String(result.func_return).split(',')).toEqual(
      expect.arrayContaining(['memory_insert', 'list_tools']),
    );
    const other = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    expect(await run('list_tools', { agent_id: other.id })).toMatchObject({ func_return: 'refused 403' });
  }, 180_000);

  it('reaches the API through its bridge with its token only, though this server asks no password', async () => {
    const bare = python(
      'import os, urllib.error, urllib.request',
      '',
      'def bare() -> str:',
      '    """Asks the API without a key."""',
      '    try:',
      '        return str(urllib.request.urlopen(os.environ["LETTA_BASE_URL"] + "/v1/agents/").status)',
      '    except urllib.error.HTTPError as error:',
      '        return str(error.code)',
    );
    const { run } = await agentWithTools(h.client, [{ source_code: bare }]);
    expect(await run('bare')).toMatchObject({
      status: 'success',
      func_return: '401',
    });
  }, 60_000);

  it('keeps the LETTA_API_KEY and LETTA_BASE_URL a sandbox config sets', async () => {
    const where = python(
      'import os',
      '',
      'def where() -> str:',
      '    """Says where its client points."""',
      '    return os.environ["LETTA_BASE_URL"] + " " + os.environ["LETTA_API_KEY"]',
    );
    const { run } = await agentWithTools(h.client, [{ source_code: where }]);
    const config = await sandboxConfig({ allow_network: true });
    const variables: string[] = [];
    try {
      for (const [key, value] of [
        ['LETTA_API_KEY', 'my own key'],
        ['LETTA_BASE_URL', 'https://letta.example.com'],
      ]) {
        const res = await fetch(`${h.server.url}/v1/sandbox-config/${config.id}/environment-variable`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ key, value }),
        });
        variables.push(((await res.json()) as { id: string }).id);
      }
      expect(await run('where')).toMatchObject({
        func_return: 'https://letta.example.com my own key',
      });
    } finally {
      for (const id of variables)
        await fetch(`${h.server.url}/v1/sandbox-config/environment-variable/${id}`, { method: 'DELETE' });
      await sandboxConfig({ allow_network: false });
    }
  }, 60_000);
});

describe("a sandboxed tool's own access token", () => {
  const PASSWORD = 'the server password tools never see';
  // Every line the server logs, down to debug.
  const logged: string[] = [];
  const h = useAgentServer(
    'openai',
    { LETTA_SERVER_PASSWORD: PASSWORD },
    'postgres',
    pino({ level: 'debug' }, { write: (line: string) => logged.push(line) }),
  );
  const admin = () => new Letta({ baseURL: h.server.url, apiKey: PASSWORD, maxRetries: 0 });

  /** Runs `poke` in a turn of a new agent; returns its tool return, the agent and another one. */
  const pokeInTurn = async (returns: string) => {
    const tool = await admin().tools.upsert({
      source_code: python(
        'import os, socket, urllib.error, urllib.request',
        '',
        'def status(call):',
        '    try:',
        '        call()',
        '        return "reached"',
        '    except Exception as error:',
        '        code = str(getattr(error, "status_code", None) or getattr(error, "code", None) or type(error).__name__)',
        '        return code + ("/explained" if "cannot message its own agent" in str(error) else "")',
        '',
        'def poke(other_id: str, host: str, port: int) -> str:',
        '    """Edits its own memory, pokes another agent and the network.',
        '',
        '    Args:',
        '        other_id: Another agent.',
        '        host: An address of the host.',
        '        port: The API port on the host.',
        '    """',
        '    me = os.environ["LETTA_AGENT_ID"]',
        '    client.agents.blocks.update("human", agent_id=me, value="Set by my own tool")',
        '    other = status(lambda: client.agents.retrieve(other_id))',
        '    own = status(lambda: client.agents.messages.create(me, messages=[{"role": "user", "content": "hi"}]))',
        '    bare = status(lambda: urllib.request.urlopen(os.environ["LETTA_BASE_URL"] + "/v1/agents/"))',
        '    password = status(lambda: urllib.request.urlopen(urllib.request.Request(os.environ["LETTA_BASE_URL"] + "/v1/agents/", headers={"Authorization": "Bearer ' +
          PASSWORD +
          '"})))',
        '    host_api = status(lambda: socket.create_connection((host, port), timeout=2))',
        '    loopback_api = status(lambda: socket.create_connection(("127.0.0.1", port), timeout=2))',
        '    outside = status(lambda: socket.create_connection(("1.1.1.1", 53), timeout=2))',
        `    return " ".join([other, own, bare, password, host_api, loopback_api, outside, ${returns}])`,
      ),
      pip_requirements: [{ name: 'letta-client' }],
    });
    const own = await admin().agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Nothing yet' }],
      tool_ids: [tool.id],
    });
    const other = await admin().agents.create({ model: 'openai/gpt-4o-mini' });
    const { hostname, port } = new URL(h.server.url);
    const host = hostname === '127.0.0.1' ? hostAddress() : hostname;
    h.stub.enqueue(
      { toolCalls: [{ name: 'poke', arguments: { other_id: other.id, host, port: Number(port) } }] },
      { text: 'Done.' },
    );
    const response = await admin().agents.messages.create(own.id, {
      messages: [{ role: 'user', content: 'Poke.' }],
    });
    const returned = toolReturnOf(response.messages);
    expect(returned).toMatchObject({ status: 'success' });
    return { words: returned.tool_return.split(' '), own, response };
  };

  it('reaches its own agent alone, through the bridge alone, and ends with the call', async () => {
    const { words, own } = await pokeInTurn('os.environ["LETTA_API_KEY"][::-1]');
    const [other, ownMessage, bare, password, hostApi, loopbackApi, outside, reversed] = words;
    expect(other).toBe('403');
    // A message to its own agent would wait behind the turn that waits for the call: refused, saying so.
    expect(ownMessage).toBe('403/explained');
    // The bridge takes tokens only: neither nothing nor the server's password passes there.
    expect([bare, password]).toEqual(['401', '401']);
    // No other way out: not the API's port on the host, nor anything beyond.
    for (const word of [hostApi, loopbackApi, outside]) expect(word).toMatch(/Error$/);
    expect((await admin().agents.blocks.retrieve('human', { agent_id: own.id })).value).toBe(
      'Set by my own tool',
    );
    // The call's token ended with the call.
    const token = [...reversed].reverse().join('');
    expect(token).toMatch(/^lct-/);
    const afterwards = new Letta({ baseURL: h.server.url, apiKey: token, maxRetries: 0 });
    await expect(afterwards.agents.retrieve(own.id)).rejects.toMatchObject({ status: 401 });
  }, 120_000);

  it('never shows in the run: its messages, steps, logs and the workflow history', async () => {
    const { words, own, response } = await pokeInTurn('os.environ["LETTA_API_KEY"]');
    // The tool returned its token; the return shows a mark in its place.
    expect(words.at(-1)).toBe('[token]');
    const runId = response.messages[0].run_id!;
    const temporal = await connectTemporalClient();
    try {
      const seen = JSON.stringify([
        (await admin().agents.messages.list(own.id)).getPaginatedItems(),
        await admin().runs.retrieve(runId),
        (await admin().runs.steps.list(runId)).getPaginatedItems(),
        (await admin().runs.messages.list(runId)).getPaginatedItems(),
        await finishedTurnHistory(temporal.client, await turnWorkflowId(h.server.db, runId)),
        logged,
      ]);
      expect(seen).toContain('[token]');
      expect(seen).not.toMatch(/lct-[0-9a-f]{16}-/);
    } finally {
      await temporal.close();
    }
  }, 120_000);
});

describe("a sandboxed tool's client working with other agents, as Letta's multi-agent docs show", () => {
  const PASSWORD = 'the server password tools never see';
  const h = useAgentServer('openai', { LETTA_SERVER_PASSWORD: PASSWORD });
  const admin = () => new Letta({ baseURL: h.server.url, apiKey: PASSWORD, maxRetries: 0 });
  const assistantTexts = (messages: { message_type?: string; content?: unknown }[]) =>
    messages.filter((m) => m.message_type === 'assistant_message').map((m) => String(m.content));

  it('messages the agents sharing a tag (Python), never one waiting on it, nor an agent outside its tags', async () => {
    const tool = await admin().tools.upsert({
      source_code: python(
        'def ask(other_id: str) -> str:',
        '    """Asks another agent.',
        '',
        '    Args:',
        '        other_id: The agent to ask.',
        '    """',
        '    try:',
        '        reply = client.agents.messages.create(other_id, messages=[{"role": "user", "content": "What do you know?"}])',
        '    except Exception as error:',
        '        return f"refused {getattr(error, \'status_code\', error)}"',
        '    return " ".join(str(m.content) for m in reply.messages if m.message_type == "assistant_message")',
      ),
      pip_requirements: [{ name: 'letta-client' }],
    });
    const agent = (tags: string[]) =>
      admin().agents.create({ model: 'openai/gpt-4o-mini', tags, tool_ids: [tool.id] });
    const [lead, mate, stranger] = [await agent(['team']), await agent(['team']), await agent([])];

    h.stub.enqueue(
      // lead asks mate; mate, in its own turn, asks lead back, who waits on it: refused.
      { toolCalls: [{ name: 'ask', arguments: { other_id: mate.id } }] },
      { toolCalls: [{ name: 'ask', arguments: { other_id: lead.id } }] },
      { text: 'The answer is 42.' },
      { text: 'Mate says 42.' },
    );
    const response = await admin().agents.messages.create(lead.id, {
      messages: [{ role: 'user', content: 'Ask your mate.' }],
    });
    expect(toolReturnOf(response.messages).tool_return).toBe('The answer is 42.');
    const mateMessages = (await admin().agents.messages.list(mate.id)).getPaginatedItems();
    expect(toolReturnOf(mateMessages).tool_return).toBe('refused 409');

    expect(
      await admin().agents.tools.run('ask', { agent_id: lead.id, args: { other_id: stranger.id } }),
    ).toMatchObject({
      func_return: 'refused 403',
    });
  }, 180_000);

  it('does the same in the other language: a Python tool creates and messages a helper, a TypeScript one edits its memory', async () => {
    const delegate = {
      source_code: python(
        'def py_delegate(task: str) -> str:',
        '    """Delegates a task to a new helper agent.',
        '',
        '    Args:',
        '        task: The task.',
        '    """',
        '    helper = client.agents.create(model="openai/gpt-4o-mini", name="py-helper")',
        '    reply = client.agents.messages.create(helper.id, messages=[{"role": "user", "content": task}])',
        '    return " ".join(str(m.content) for m in reply.messages if m.message_type == "assistant_message")',
      ),
      pip_requirements: [{ name: 'letta-client' }],
    };
    const remember = typescriptTool(
      'ts_remember',
      'Remembers a fact.',
      ['fact'],
      'export async function ts_remember(fact: string): Promise<string> {',
      "  await client.agents.blocks.update('human', { agent_id: process.env.LETTA_AGENT_ID, value: fact });",
      "  return 'remembered';",
      '}',
    );
    const { agent, run } = await agentWithTools(admin(), [delegate, remember], {
      memory_blocks: [{ label: 'human', value: 'Nothing yet' }],
    });
    h.stub.enqueue({ text: 'Four.' });
    expect(await run('py_delegate', { task: 'Two and two?' })).toMatchObject({
      status: 'success',
      func_return: 'Four.',
    });
    expect(await run('ts_remember', { fact: 'Likes tea' })).toMatchObject({
      status: 'success',
      func_return: 'remembered',
    });
    expect((await admin().agents.blocks.retrieve('human', { agent_id: agent.id })).value).toBe('Likes tea');
  }, 180_000);

  it("gives the agents it creates its own agent's tags, no others", async () => {
    const spawnTool = {
      source_code: python(
        'def spawn(tag: str) -> str:',
        '    """Creates a tagged helper.',
        '',
        '    Args:',
        "        tag: The helper's tag.",
        '    """',
        '    try:',
        '        return client.agents.create(model="openai/gpt-4o-mini", tags=[tag]).tags[0]',
        '    except Exception as error:',
        '        return f"refused {getattr(error, \'status_code\', error)}"',
      ),
      pip_requirements: [{ name: 'letta-client' }],
    };
    const { run } = await agentWithTools(admin(), [spawnTool], { tags: ['team'] });
    const spawn = (tag: string) => run('spawn', { tag });
    expect(await spawn('team')).toMatchObject({ func_return: 'team' });
    // Another tag would make the helper's calls reach agents its creator's do not.
    expect(await spawn('admins')).toMatchObject({ func_return: 'refused 403' });
  }, 120_000);

  it('creates an agent (TypeScript), messages it, and reaches it again in a later call', async () => {
    const delegate = typescriptTool(
      'delegate',
      'Delegates a task to a new helper agent.',
      ['task'],
      'export async function delegate(task: string): Promise<string> {',
      "  const helper = await client.agents.create({ model: 'openai/gpt-4o-mini', name: 'helper' });",
      "  const reply = await client.agents.messages.create(helper.id, { messages: [{ role: 'user', content: task }] });",
      "  const texts = reply.messages.filter((m) => m.message_type === 'assistant_message').map((m) => m.content);",
      "  return `${helper.id} ${texts.join(' ')}`;",
      '}',
    );
    const recall = typescriptTool(
      'recall',
      'Names a helper agent.',
      ['helper_id'],
      'export async function recall(helper_id: string): Promise<string> {',
      '  return (await client.agents.retrieve(helper_id)).name;',
      '}',
    );
    const { agent: lead, run } = await agentWithTools(admin(), [delegate, recall]);
    h.stub.enqueue(
      { toolCalls: [{ name: 'delegate', arguments: { task: 'Count to three.' } }] },
      { text: 'One, two, three.' },
      { text: 'Delegated.' },
    );
    const response = await admin().agents.messages.create(lead.id, {
      messages: [{ role: 'user', content: 'Delegate.' }],
    });
    const returned = toolReturnOf(response.messages);
    expect(returned.status).toBe('success');
    const [helperId, ...reply] = returned.tool_return.split(' ');
    expect(reply.join(' ')).toBe('One, two, three.');
    expect(assistantTexts((await admin().agents.messages.list(helperId)).getPaginatedItems())).toEqual([
      'One, two, three.',
    ]);
    // The helper is the lead's: a later call of the lead reaches it; another agent's call does not.
    expect(await run('recall', { helper_id: helperId })).toMatchObject({
      status: 'success',
      func_return: 'helper',
    });
    const other = await agentWithTools(admin(), [recall]);
    expect(await other.run('recall', { helper_id: helperId })).toMatchObject({ status: 'error' });
  }, 240_000);
});

describe("a sandboxed tool's client when the API and the workers run apart", () => {
  const PASSWORD = 'the split deployment password';
  let schema: TestSchema;
  let stub: OpenAiStub;
  const servers: RunningServer[] = [];

  beforeAll(async () => {
    schema = await createTestSchema();
    stub = await startOpenAiStub();
  });
  afterAll(async () => {
    for (const server of servers.reverse()) await server.stop();
    await stub?.close();
    await schema?.drop();
  });

  it("reaches the API at LETTA_PUBLIC_URL from a worker's sandbox without a network, with its token alone", async () => {
    const port = await freePort();
    const env = {
      DATABASE_URL: schema.url,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TASK_QUEUE_PREFIX: `split-${uniqueSuffix()}-`,
      PORT: String(port),
      LETTA_SERVER_PASSWORD: PASSWORD,
      LETTA_PUBLIC_URL: `http://127.0.0.1:${port}`,
      OPENAI_BASE_URL: stub.baseURL,
      OPENAI_API_KEY: 'test-key',
    };
    servers.push(await startServer(testConfig(env), silentLogger(), { role: 'api' }));
    servers.push(await startServer(testConfig(env), silentLogger(), { role: 'worker' }));
    const admin = new Letta({ baseURL: `http://127.0.0.1:${port}`, apiKey: PASSWORD, maxRetries: 0 });
    const tool = await admin.tools.create({
      source_code: python(
        'import os, urllib.error, urllib.request',
        '',
        'def remember(fact: str) -> str:',
        '    """Remembers a fact.',
        '',
        '    Args:',
        '        fact: What to remember.',
        '    """',
        '    client.agents.blocks.update("human", agent_id=os.environ["LETTA_AGENT_ID"], value=fact)',
        '    try:',
        '        urllib.request.urlopen(os.environ["LETTA_BASE_URL"] + "/v1/agents/")',
        '    except urllib.error.HTTPError as error:',
        '        return f"remembered, {error.code} without a token"',
      ),
      pip_requirements: [{ name: 'letta-client' }],
    });
    const agent = await admin.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Nothing yet' }],
      tool_ids: [tool.id],
    });
    stub.enqueue({ toolCalls: [{ name: 'remember', arguments: { fact: 'Likes tea' } }] }, { text: 'Noted.' });
    const response = await admin.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'I like tea.' }],
    });
    expect(toolReturnOf(response.messages)).toMatchObject({
      status: 'success',
      tool_return: 'remembered, 401 without a token',
    });
    expect((await admin.agents.blocks.retrieve('human', { agent_id: agent.id })).value).toBe('Likes tea');
  }, 120_000);
});

/** An address of this host other than loopback, which a sandbox with the host's network would reach. */
function hostAddress(): string {
  const addresses = Object.values(os.networkInterfaces()).flatMap((list) => list ?? []);
  return addresses.find((a) => a.family === 'IPv4' && !a.internal)?.address ?? '10.0.0.1';
}
