import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { useAgentServer } from './helpers/agent-server';
import { sourceRunAnswer } from './helpers/tool-returns';

/** Custom Python tools run in the local sandbox (bubblewrap): Letta's execution contract, isolated. */
describe('running custom tools in the local sandbox', () => {
  const h = useAgentServer('openai', { TOOL_TIMEOUT_MS: '2000' });

  const run = async (source: string, args: Record<string, unknown> = {}, env?: Record<string, string>) => {
    const res = await fetch(`${h.server.url}/v1/tools/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source_code: source, args, env_vars: env }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const tool = (body: string, signature = '') =>
    `import json, os, socket, time\n\ndef probe(${signature}):\n    """Probes."""\n${body
      .split('\n')
      .map((line) => `    ${line}`)
      .join('\n')}\n`;

  it("runs the source's last function with the arguments, and captures what it prints", async () => {
    const { status, body } = await run(
      tool('print("working on", city)\nreturn {"city": city, "temp": 21}', 'city: str'),
      {
        city: 'Oslo',
      },
    );
    expect(status).toBe(200);
    // Letta's ToolReturnMessage of no call, the return as Python's str() shows it.
    const part = {
      tool_return: "{'city': 'Oslo', 'temp': 21}",
      status: 'success',
      tool_call_id: 'null',
      stdout: ['working on Oslo\n'],
      stderr: [],
    };
    expect(body).toEqual(sourceRunAnswer('probe', part));
  });

  it("turns the tool's exception into an error result with Letta's text and the traceback", async () => {
    const { body } = await run(tool('raise ValueError("boom")'));
    expect(body.status).toBe('error');
    expect(body.tool_return).toBe('Error executing function probe: ValueError: boom');
    expect((body.stderr as string[])[0]).toContain('Traceback');
  });

  it('keeps the tool away from the server: its environment, the network, the file system, root', async () => {
    const { body } = await run(
      tool(
        [
          'result = {"uid": os.getuid(), "env": sorted(os.environ)}',
          'try:',
          '    socket.create_connection(("127.0.0.1", int(os.environ["SERVER_PORT"])), timeout=2)',
          '    result["network"] = "reached the server"',
          'except OSError as error:',
          '    result["network"] = type(error).__name__',
          'try:',
          '    open("/usr/escaped", "w")',
          '    result["write"] = "wrote to /usr"',
          'except OSError as error:',
          '    result["write"] = type(error).__name__',
          'return json.dumps(result)',
        ].join('\n'),
      ),
      {},
      { SERVER_PORT: new URL(h.server.url).port, GREETING: 'hi' },
    );
    const result = JSON.parse(body.tool_return as string) as {
      uid: number;
      env: string[];
      network: string;
      write: string;
    };
    expect(result.uid).toBe(65534);
    expect(result.env).toEqual(expect.arrayContaining(['GREETING', 'SERVER_PORT', 'PATH', 'HOME']));
    expect(result.env).not.toContain('OPENAI_API_KEY');
    expect(result.env).not.toContain('DATABASE_URL');
    expect(result.network).toMatch(/OSError|ConnectionRefusedError/);
    expect(result.write).toMatch(/OSError|PermissionError/);
  });

  it('kills a tool that runs past the timeout', async () => {
    const started = Date.now();
    const { body } = await run(tool('time.sleep(30)'));
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(body).toMatchObject({
      status: 'error',
      tool_return:
        'Error executing function probe: TimeoutError: Executing tool probe timed out after 2.0 seconds.',
    });
  });

  it('refuses source that is not Python it can read', async () => {
    expect((await run('def broken(:\n')).status).toBe(400);
  });

  it("runs an agent's tool with its sandbox config's variables overlaid by the agent's secrets", async () => {
    const post = (path: string, body: object) =>
      fetch(`${h.server.url}/v1/sandbox-config${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((res) => res.json() as Promise<{ id: string }>);
    const config = await post('/local/default', {});
    await post(`/${config.id}/environment-variable`, { key: 'NAME', value: 'from the sandbox config' });
    await post(`/${config.id}/environment-variable`, { key: 'PLACE', value: 'Oslo' });
    const created = await h.client.tools.create({
      source_code:
        'import os\n\ndef whoami(greeting: str) -> str:\n    """Greets.\n\n    Args:\n        greeting: The greeting.\n    """\n    return greeting + " " + os.environ["NAME"] + " in " + os.environ["PLACE"]\n',
    });
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tool_ids: [created.id],
      secrets: { NAME: 'Ada' },
    });
    const result = await h.client.agents.tools.run('whoami', {
      agent_id: agent.id,
      args: { greeting: 'Hello' },
    });
    expect(result).toMatchObject({ status: 'success', func_return: 'Hello Ada in Oslo' });

    // Called by the model in a turn, the tool sees the same: read with the call, in its own statement.
    h.stub.enqueue({ toolCalls: [{ name: 'whoami', arguments: { greeting: 'Hi' } }] }, { text: 'Done.' });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Who are you?' }],
    });
    expect(response.messages.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'success',
      tool_return: 'Hi Ada in Oslo',
    });
  });

  const versioned = (reply: string) =>
    `def pick_word(topic: str) -> str:\n    """Picks a word.\n\n    Args:\n        topic: What about.\n    """\n    print("picking for", topic)\n    return "${reply} " + topic\n`;

  it('runs a custom tool the model calls in a turn, at the version the turn started with', async () => {
    const tool = await h.client.tools.create({ source_code: versioned('first') });
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
    // The model takes its time: meanwhile the tool changes, and the turn keeps the version it resolved.
    h.stub.enqueue(
      { toolCalls: [{ name: 'pick_word', arguments: { topic: 'cats' } }], delayMs: 1_500 },
      { text: 'Done.' },
    );
    const run = await h.client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'A word about cats?' }],
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    await h.client.tools.upsert({ source_code: versioned('second') });
    let current = await h.client.runs.retrieve(run.id);
    for (let i = 0; i < 100 && current.status !== 'completed' && current.status !== 'failed'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      current = await h.client.runs.retrieve(run.id);
    }
    expect(current.stop_reason).toBe('end_turn');
    const messages = (await h.client.runs.messages.list(run.id)).getPaginatedItems();
    expect(messages.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'success',
      tool_return: 'first cats',
      stdout: ['picking for cats\n'],
    });

    // The next turn resolves the new version.
    h.stub.enqueue({ toolCalls: [{ name: 'pick_word', arguments: { topic: 'dogs' } }] }, { text: 'Done.' });
    const next = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'And dogs?' }],
    });
    expect(next.messages.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      tool_return: 'second dogs',
    });
  });
  it('gives a tool that asks for them the agent id and a snapshot of its memory, and writes edits back', async () => {
    const tool = await h.client.tools.create({
      source_code: [
        'async def remember(fact: str, agent_state: "AgentState", agent_id: str) -> str:',
        '    """Remembers a fact about the human.',
        '',
        '    Args:',
        '        fact: The fact.',
        '        agent_id: Filled in by the server.',
        '    """',
        '    human = agent_state.memory.get_block("human")',
        '    agent_state.memory.update_block_value("human", human.value + "\\n" + fact)',
        '    return f"{agent_id} remembers {fact}"',
        '',
      ].join('\n'),
    });
    const parameters = tool.json_schema?.parameters as { properties: Record<string, unknown> };
    expect(Object.keys(parameters.properties)).toEqual(['fact', 'agent_id']);
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tool_ids: [tool.id],
      memory_blocks: [{ label: 'human', value: 'Name: Ada' }],
    });
    h.stub.enqueue(
      { toolCalls: [{ name: 'remember', arguments: { fact: 'likes tea' } }] },
      { text: 'Noted.' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'I like tea.' }],
    });
    expect(response.messages.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'success',
      tool_return: `${agent.id} remembers likes tea`,
    });
    const human = await h.client.agents.blocks.retrieve('human', { agent_id: agent.id });
    expect(human.value).toBe('Name: Ada\nlikes tea');
  });

  it("refuses a memory write-back past the block's limit, as an error the model sees", async () => {
    const tool = await h.client.tools.create({
      source_code:
        'def shout(agent_state: "AgentState") -> str:\n    """Shouts."""\n    agent_state.memory.update_block_value("human", "A" * 500)\n    return "done"\n',
    });
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tool_ids: [tool.id],
      memory_blocks: [{ label: 'human', value: 'Name: Ada', limit: 100 }],
    });
    h.stub.enqueue({ toolCalls: [{ name: 'shout', arguments: {} }] }, { text: 'Oops.' });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Shout.' }],
    });
    expect(response.messages.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'error',
      tool_return: expect.stringContaining('Exceeds 100 character limit (requested 500)'),
    });
    expect((await h.client.agents.blocks.retrieve('human', { agent_id: agent.id })).value).toBe('Name: Ada');
  });
  it('reaches the network only when the local sandbox config allows it', async () => {
    const site = http.createServer((_req, res) => res.end('hello from the host'));
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
    const config = async (allow: boolean) => {
      const res = await fetch(`${h.server.url}/v1/sandbox-config/local`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ allow_network: allow }),
      });
      expect(res.status).toBe(200);
    };
    try {
      const tool = await h.client.tools.create({
        source_code:
          'import urllib.request\n\ndef fetch_home(url: str) -> str:\n    """Fetches.\n\n    Args:\n        url: Where.\n    """\n    return urllib.request.urlopen(url, timeout=2).read().decode()\n',
      });
      const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
      const fetchHome = () => h.client.agents.tools.run('fetch_home', { agent_id: agent.id, args: { url } });
      await config(false);
      expect(await fetchHome()).toMatchObject({ status: 'error' });
      await config(true);
      expect(await fetchHome()).toMatchObject({ status: 'success', func_return: 'hello from the host' });
    } finally {
      await config(false);
      await new Promise<void>((resolve) => site.close(() => resolve()));
    }
  });
  it('holds a tool to its own timeout (metadata_.timeout_seconds), and refuses one that is no number', async () => {
    const source =
      'import time\n\ndef nap() -> str:\n    """Naps."""\n    time.sleep(1.5)\n    return "rested"\n';
    const created = await h.client.tools.create({ source_code: source });
    const tool = await h.client.tools.update(created.id, { metadata_: { timeout_seconds: 0.5 } });
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
    h.stub.enqueue({ toolCalls: [{ name: 'nap', arguments: {} }] }, { text: 'Too slow.' });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Nap.' }],
    });
    expect(response.messages.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'error',
      tool_return:
        'Error executing function nap: TimeoutError: Executing tool nap timed out after 0.5 seconds.',
    });
    await expect(
      h.client.tools.update(tool.id, { metadata_: { timeout_seconds: 'soon' } }),
    ).rejects.toMatchObject({ status: 400 });
  });
});
