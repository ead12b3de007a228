import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type {
  McpServerCreateParams,
  StreamableHTTPMcpServer,
} from '@letta-ai/letta-client/resources/mcp-servers/mcp-servers';
import type { z } from 'zod';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';
import { startAuthProxy, startHttpEverything, stdioConfig } from './helpers/mcp-servers';
import { descendantsOf } from './helpers/process';
import { connectTemporalClient, payloadTexts, turnWorkflowId, finishedTurnHistory } from './helpers/temporal';
import { freePort } from './helpers/env';
import { projectRoot } from '../src/paths';
import { getMcpServer, recordMcpConnection } from '../src/db/mcp-servers';
import { syncMcpTools } from '../src/mcp/tool-sync';
import type { McpConnectionSchema } from '../src/api/schemas/mcp-servers';

type McpConnection = z.infer<typeof McpConnectionSchema>;

type Config = McpServerCreateParams['config'];

/** Our `connection` of an MCP server, which Letta's client does not type. */
const connectionOf = (server: object) => (server as { connection: McpConnection }).connection;

/** The server-everything processes over stdio this process started (the server's connections). */
const everythingProcesses = () =>
  descendantsOf(process.pid).filter((pid) => {
    try {
      const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      return args.some((arg) => arg.includes('server-everything')) && args.includes('stdio');
    } catch {
      return false; // gone meanwhile
    }
  });

const killAll = (pids: number[]) =>
  pids.forEach((pid) => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  });

/**
 * MCP servers as a tool execution mode, against the reference servers installed from npm: registered
 * through the official client, their tools stored and attached, the model (stub) calling them through
 * the `tools-mcp` activity.
 */
describe('MCP servers', () => {
  // Shown read-only to stdio servers (they run in the MCP sandbox), for server-filesystem to serve.
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-servers-'));
  fs.chmodSync(work, 0o755);
  const h = useAgentServer('openai', {
    MCP_CONNECT_TIMEOUT_MS: '5000',
    MCP_RECONNECT_INITIAL_MS: '100',
    MCP_STDIO_READ_ONLY_PATHS: work,
    // Small, so that a result's large image is described instead.
    TOOL_RETURN_IMAGE_MAX_BYTES: '1000',
  });
  const children: ChildProcess[] = [];
  // Tool names are unique: a server left registered would rename the next one's tools (<server>__<tool>).
  afterEach(async () => {
    for (const server of await h.client.mcpServers.list()) await h.client.mcpServers.delete(server.id!);
  });
  afterAll(() => {
    children.forEach((child) => child.kill('SIGKILL'));
    fs.rmSync(work, { recursive: true, force: true });
  });

  const httpEverything = async (mode: 'streamableHttp' | 'sse') => {
    const started = await startHttpEverything(mode);
    children.push(started.child);
    return started;
  };
  const register = (server_name: string, config: Config) =>
    h.client.mcpServers.create({ server_name, config });
  /** An MCP server of our own over stdio, with the SDK's McpServer (`server`), where the MCP sandbox shows it. */
  const scriptServer = (file: string, ...lines: string[]) => {
    // Under the project's node_modules, which the sandbox shows, though it may be a link elsewhere.
    const nodeModules = path.join(projectRoot, 'node_modules');
    const sdk = (module: string) => {
      const file = require.resolve(`@modelcontextprotocol/sdk/${module}`);
      return pathToFileURL(path.join(nodeModules, path.relative(fs.realpathSync(nodeModules), file))).href;
    };
    const script = path.join(work, file);
    fs.writeFileSync(
      script,
      [
        `import { McpServer } from '${sdk('server/mcp.js')}';`,
        `import { StdioServerTransport } from '${sdk('server/stdio.js')}';`,
        `import { ListToolsRequestSchema, CallToolRequestSchema } from '${sdk('types.js')}';`,
        "const server = new McpServer({ name: 'scripted', version: '1.0.0' });",
        ...lines,
        'await server.connect(new StdioServerTransport());',
      ].join('\n'),
    );
    return script;
  };

  const toolOf = async (serverId: string, name: string) =>
    (await h.client.mcpServers.tools.list(serverId)).find((tool) => tool.name === name)!;

  /**
   * An agent with the server's tool, asked once; the model calls the tool with `args`, then (unless the
   * turn is to fail at the call) answers.
   */
  const callThroughModel = async (serverId: string, toolName: string, args: Record<string, unknown>) => {
    const tool = await toolOf(serverId, toolName);
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
    h.stub.enqueue({ toolCalls: [{ name: toolName, arguments: args }] });
    h.stub.enqueue({ text: 'Done.' });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: `Use ${toolName}.` }],
    });
    const toolReturn = response.messages.find((m) => m.message_type === 'tool_return_message') as
      { status: string; tool_return: string } | undefined;
    const seenByModel = h.stub.requests.at(-1)!.messages.find((m) => m.role === 'tool')?.content;
    return { agent, response, toolReturn, seenByModel, stopReason: response.stop_reason.stop_reason };
  };

  describe.each([
    ['stdio', async (): Promise<Config> => stdioConfig('everything', ['stdio'])],
    [
      'streamable_http',
      async (): Promise<Config> => ({
        mcp_server_type: 'streamable_http',
        server_url: (await httpEverything('streamableHttp')).url,
      }),
    ],
    [
      'sse',
      async (): Promise<Config> => ({
        mcp_server_type: 'sse',
        server_url: (await httpEverything('sse')).url,
      }),
    ],
  ])('server-everything over %s', (transport, configure) => {
    it('is registered, lists its tools, and the model calls one of them', async () => {
      const name = `everything-${transport}`;
      const server = await register(name, await configure());
      expect(server).toMatchObject({ server_name: name, mcp_server_type: transport });
      expect(server.id).toMatch(/^mcp_server-/);

      const tools = await h.client.mcpServers.tools.list(server.id!);
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'get-sum', 'get-tiny-image']));
      const echo = tools.find((t) => t.name === 'echo')!;
      expect(echo).toMatchObject({ tool_type: 'external_mcp', tags: [`mcp:${name}`] });
      expect(echo.json_schema).toMatchObject({ name: 'echo', 'mcp:SCHEMA_STATUS': 'STRICT_COMPLIANT' });

      const { toolReturn, seenByModel } = await callThroughModel(server.id!, 'echo', {
        message: `over ${transport}`,
      });
      expect(toolReturn).toMatchObject({ status: 'success', tool_return: `Echo: over ${transport}` });
      expect(seenByModel).toContain(`Echo: over ${transport}`);

      await h.client.mcpServers.delete(server.id!);
      expect((await h.client.tools.list({ name: 'echo' })).items).toEqual([]);
    });
  });

  it('server-filesystem reads a file of its folder; strict-mode nulls of optional arguments are dropped', async () => {
    const folder = fs.mkdtempSync(path.join(work, 'files-'));
    fs.chmodSync(folder, 0o755);
    fs.writeFileSync(path.join(folder, 'notes.txt'), 'line one\nline two\n');
    const server = await register('files', stdioConfig('filesystem', [folder]));
    const { toolReturn } = await callThroughModel(server.id!, 'read_text_file', {
      path: path.join(folder, 'notes.txt'),
      head: null,
      tail: null,
    });
    expect(toolReturn?.status).toBe('success');
    expect(toolReturn?.tool_return).toContain('line two');

    const denied = await h.client.mcpServers.tools.run((await toolOf(server.id!, 'read_text_file')).id!, {
      mcp_server_id: server.id!,
      args: { path: '/etc/passwd' },
    });
    expect(denied.status).toBe('error');
    expect(denied.func_return).toMatch(/Access denied/);
  });

  it('server-memory keeps what the model tells it (in a file of its sandbox)', async () => {
    const memoryFile = '/tmp/memory.jsonl';
    const server = await register('memory', stdioConfig('memory', [], { MEMORY_FILE_PATH: memoryFile }));
    const { toolReturn } = await callThroughModel(server.id!, 'create_entities', {
      entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }],
    });
    expect(toolReturn?.status).toBe('success');
    expect(toolReturn?.tool_return).toContain('Ada');
    const graph = await h.client.mcpServers.tools.run((await toolOf(server.id!, 'read_graph')).id!, {
      mcp_server_id: server.id!,
      args: {},
    });
    expect(graph.func_return).toContain('wrote the first program');
  });

  it("returns the server's isError results as errors, and runs tools by id", async () => {
    const server = await register('everything-run', stdioConfig('everything', ['stdio']));
    const sum = await toolOf(server.id!, 'get-sum');
    const run = (args: Record<string, unknown>) =>
      h.client.mcpServers.tools.run(sum.id!, { mcp_server_id: server.id!, args });
    expect(await run({ a: 2, b: 3 })).toMatchObject({
      status: 'success',
      func_return: expect.stringContaining('5'),
    });
    const refused = await run({ a: 'two', b: 3 });
    expect(refused.status).toBe('error');
    expect(refused.func_return).toMatch(/Invalid arguments/);
  });

  it('gives a stdio server only the environment of its config, and reconnects when the config changes', async () => {
    const server = await register(
      'everything-env',
      stdioConfig('everything', ['stdio'], { GREETING: 'hello' }),
    );
    const getEnv = await toolOf(server.id!, 'get-env');
    const environment = async () => {
      const result = await h.client.mcpServers.tools.run(getEnv.id!, { mcp_server_id: server.id!, args: {} });
      return JSON.parse(result.func_return as string) as Record<string, string>;
    };
    const seen = await environment();
    expect(seen.GREETING).toBe('hello');
    expect(Object.keys(seen)).not.toEqual(expect.arrayContaining(['OPENAI_API_KEY']));
    expect(Object.keys(seen)).not.toEqual(expect.arrayContaining(['DATABASE_URL']));
    expect(Object.keys(seen).filter((key) => process.env[key] === undefined)).toEqual(['GREETING']);
    expect(server).toMatchObject({ env: { GREETING: '****' } });

    const renamed = await h.client.mcpServers.update(server.id!, {
      server_name: 'everything-env-2',
      config: { mcp_server_type: 'stdio', command: null, args: null, env: { GREETING: 'bonjour' } },
    });
    expect(renamed.server_name).toBe('everything-env-2');
    expect((await environment()).GREETING).toBe('bonjour');
    expect((await toolOf(server.id!, 'get-env')).tags).toEqual(['mcp:everything-env-2']);
  });

  it('keeps the same tool of two servers as two tools, both offered to one agent, each call reaching its own server', async () => {
    const left = await register('left', stdioConfig('everything', ['stdio'], { SIDE: 'left' }));
    const right = await register('right', stdioConfig('everything', ['stdio'], { SIDE: 'right' }));
    const leftTool = await toolOf(left.id!, 'get-env');
    // The name was taken: the second server's tool is stored under its server's name.
    const rightTool = await toolOf(right.id!, 'right__get-env');
    expect(rightTool).toMatchObject({ tool_type: 'external_mcp', tags: ['mcp:right'] });
    expect(rightTool.json_schema).toMatchObject({ name: 'right__get-env' });
    expect(await h.client.mcpServers.refresh(right.id!)).toMatchObject({
      added: [],
      updated: [],
      deleted: [],
    });

    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tool_ids: [leftTool.id!, rightTool.id!],
    });
    const before = h.stub.requests.length;
    h.stub.enqueue({ toolCalls: [{ name: 'get-env' }] });
    h.stub.enqueue({ toolCalls: [{ name: 'right__get-env' }] });
    h.stub.enqueue({ text: 'Both.' });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Ask both.' }],
    });
    const offered = h.stub.requests[before].tools!.map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(['get-env', 'right__get-env']));
    const sides = response.messages.flatMap((m) =>
      m.message_type === 'tool_return_message'
        ? [(JSON.parse((m as { tool_return: string }).tool_return) as Record<string, string>).SIDE]
        : [],
    );
    expect(sides).toEqual(['left', 'right']);
  });

  it("cuts a tool's return at its return_char_limit, which the tools API may change", async () => {
    const server = await register('everything-limit', stdioConfig('everything', ['stdio']));
    const echo = await toolOf(server.id!, 'echo');
    await h.client.tools.update(echo.id!, { return_char_limit: 12 });
    await expect(h.client.tools.update(echo.id!, { description: 'mine' })).rejects.toMatchObject({
      status: 400,
    });
    const { toolReturn } = await callThroughModel(server.id!, 'echo', { message: 'a rather long message' });
    expect(toolReturn?.tool_return).toMatch(/^Echo: a rath/);
    expect(toolReturn?.tool_return).not.toContain('long message');
  });

  it('refresh adds, updates and removes stored tools to match the server', async () => {
    const memoryFile = '/tmp/refresh.jsonl';
    const server = await register(
      'memory-refresh',
      stdioConfig('memory', [], { MEMORY_FILE_PATH: memoryFile }),
    );
    await h.client.tools.delete((await toolOf(server.id!, 'read_graph')).id!);
    const search = await toolOf(server.id!, 'search_nodes');
    await h.server.db.query(`UPDATE tools SET description = 'stale' WHERE id = $1`, [search.id]);
    await h.server.db.query(
      `INSERT INTO tools (id, name, tool_type, json_schema, metadata)
       VALUES ('tool-00000000-0000-4000-8000-000000000001', 'gone-tool', 'external_mcp', '{}', $1::jsonb)`,
      [JSON.stringify({ mcp: { server_id: server.id, server_name: 'memory-refresh' } })],
    );
    const summary = await h.client.mcpServers.refresh(server.id!);
    expect(summary).toMatchObject({
      added: ['read_graph'],
      updated: ['search_nodes'],
      deleted: ['gone-tool'],
    });
    expect((await toolOf(server.id!, 'search_nodes')).description).not.toBe('stale');
  });

  it('stores the tools again when the server announces that its tool list changed', async () => {
    // server-everything announces a change of its tool list whenever a client connects.
    const server = await register('everything-changes', stdioConfig('everything', ['stdio']));
    const processes = everythingProcesses();
    await h.client.tools.delete((await toolOf(server.id!, 'echo')).id!);
    killAll(processes);
    const sum = await toolOf(server.id!, 'get-sum');
    const ran = await eventually(
      () =>
        h.client.mcpServers.tools
          .run(sum.id!, { mcp_server_id: server.id!, args: { a: 1, b: 1 } })
          .catch(() => undefined),
      (result) => result?.status === 'success',
    );
    expect(ran?.status).toBe('success');
    const names = await eventually(
      async () => (await h.client.mcpServers.tools.list(server.id!)).map((t) => t.name),
      (listed) => listed.includes('echo'),
    );
    expect(names).toContain('echo');
  });

  it('keeps credentials encrypted, shows them masked, and keeps them out of workflow history', async () => {
    const target = await httpEverything('streamableHttp');
    const token = 'sk-test-token-0123456789';
    const proxy = await startAuthProxy(target.port, token);
    try {
      const server = await register('private', {
        mcp_server_type: 'streamable_http',
        server_url: `${proxy.origin}/mcp`,
        auth_token: token,
        custom_headers: { 'X-Team': 'team-secret-abcdef' },
      });
      expect(server).toMatchObject({ auth_token: '****6789', custom_headers: { 'X-Team': '****cdef' } });
      expect(proxy.requests.at(-1)).toMatchObject({
        authorization: `Bearer ${token}`,
        'x-team': 'team-secret-abcdef',
      });
      const [stored] = await h.server.db.query<Record<string, unknown>>(
        'SELECT config::text AS config, secrets FROM mcp_servers WHERE id = $1',
        [server.id],
      );
      expect(JSON.stringify(stored)).not.toMatch(/sk-test-token|team-secret/);

      // What was read, sent back: the masked values keep the stored secrets.
      const shown = server as StreamableHTTPMcpServer;
      const updated = await h.client.mcpServers.update(server.id!, {
        config: {
          mcp_server_type: 'streamable_http',
          server_url: shown.server_url,
          auth_token: shown.auth_token,
          custom_headers: shown.custom_headers,
        },
      });
      expect((updated as StreamableHTTPMcpServer).auth_token).toBe('****6789');
      const { response, toolReturn } = await callThroughModel(server.id!, 'echo', { message: 'hush' });
      expect(toolReturn).toMatchObject({ status: 'success', tool_return: 'Echo: hush' });

      const temporal = await connectTemporalClient();
      try {
        const events = await finishedTurnHistory(
          temporal.client,
          await turnWorkflowId(h.server.db, response.messages[0].run_id!),
        );
        expect(payloadTexts(events).filter((text) => /sk-test-token|team-secret/.test(text))).toEqual([]);
      } finally {
        await temporal.close();
      }

      // A revoked token fails the call once, for good (not retried): the model reads why.
      proxy.accepting = false;
      const refusedBefore = proxy.requests.length;
      const revoked = await callThroughModel(server.id!, 'echo', { message: 'again' });
      expect(revoked.toolReturn).toMatchObject({ status: 'error' });
      expect(revoked.toolReturn?.tool_return).toMatch(/^Error executing function echo: McpAuthError: /);
      expect(revoked.stopReason).toBe('end_turn');
      const posts = proxy.requests.slice(refusedBefore).filter((headers) => headers['content-type']);
      expect(posts).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it('stores a server it cannot reach, says why on the server, and connects when its tools are used', async () => {
    const port = await freePort();
    const config: Config = { mcp_server_type: 'streamable_http', server_url: `http://127.0.0.1:${port}/mcp` };
    const server = await register('later', config);
    expect(server).toMatchObject({ server_name: 'later', server_url: config.server_url });
    expect(connectionOf(server)).toMatchObject({ status: 'failed', last_error: expect.any(String) });
    const triedAt = Date.parse(connectionOf(server).last_tried_at!);
    expect(connectionOf(await h.client.mcpServers.retrieve(server.id!))).toEqual(connectionOf(server));

    // Listing its tools tries again: a clear 424 while nothing listens, the attempt recorded.
    await expect(h.client.mcpServers.tools.list(server.id!)).rejects.toMatchObject({
      status: 424,
      error: { detail: expect.stringMatching(/^MCP server 'later': /) },
    });
    const again = connectionOf(await h.client.mcpServers.retrieve(server.id!));
    expect(again.status).toBe('failed');
    expect(Date.parse(again.last_tried_at!)).toBeGreaterThanOrEqual(triedAt);

    // Once the server listens there, listing its tools connects, stores them, and says so.
    children.push((await startHttpEverything('streamableHttp', port)).child);
    const tools = await h.client.mcpServers.tools.list(server.id!);
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo']));
    expect(connectionOf(await h.client.mcpServers.retrieve(server.id!))).toMatchObject({
      status: 'connected',
      last_error: null,
    });
  });

  it('stores an update it cannot reach, as Letta, keeping the tools of the config that answered', async () => {
    const { url } = await httpEverything('streamableHttp');
    const server = await register('moving', { mcp_server_type: 'streamable_http', server_url: url });
    expect(connectionOf(server).status).toBe('connected');
    const gone = `http://127.0.0.1:${await freePort()}/mcp`;
    const updated = await h.client.mcpServers.update(server.id!, {
      config: { mcp_server_type: 'streamable_http', server_url: gone },
    });
    expect(updated).toMatchObject({ server_url: gone });
    expect(connectionOf(updated).status).toBe('failed');
    expect((await h.client.tools.list({ name: 'echo' })).items).toHaveLength(1);
    await expect(h.client.mcpServers.tools.list(server.id!)).rejects.toMatchObject({ status: 424 });
  });

  it('records what a listing found only for the config it listed with', async () => {
    const { url } = await httpEverything('streamableHttp');
    const server = await register('versioned', { mcp_server_type: 'streamable_http', server_url: url });
    const before = (await getMcpServer(h.server.db, server.id!))!;
    // A listing made with that config, ending after the config changed (to one nothing answers).
    const gone = `http://127.0.0.1:${await freePort()}/mcp`;
    await h.client.mcpServers.update(server.id!, {
      config: { mcp_server_type: 'streamable_http', server_url: gone },
    });
    const late = [{ name: 'late', inputSchema: { type: 'object' as const, properties: {} } }];
    expect(await syncMcpTools(h.server.db, server.id!, late, before.config_version)).toEqual({
      added: [],
      updated: [],
      deleted: [],
      skipped: [],
    });
    await recordMcpConnection(h.server.db, before, null);
    expect((await h.client.tools.list({ name: 'late' })).items).toEqual([]);
    expect(connectionOf(await h.client.mcpServers.retrieve(server.id!)).status).toBe('failed');
  });

  it('stores a server too slow to answer, and listing its tools is a 408', async () => {
    const mute = await register('mute', { mcp_server_type: 'stdio', command: 'sleep', args: ['30'] });
    expect(connectionOf(mute)).toMatchObject({
      status: 'failed',
      last_error: expect.stringMatching(/took longer than 5000 ms/),
    });
    await expect(h.client.mcpServers.tools.list(mute.id!)).rejects.toMatchObject({ status: 408 });
  });

  it('a server killed mid-call: the activity fails, the connection is made again, the retry succeeds', async () => {
    const server = await register('everything-killed', stdioConfig('everything', ['stdio']));
    const before = everythingProcesses();
    const asked = h.stub.requests.length;
    const call = callThroughModel(server.id!, 'trigger-long-running-operation', { duration: 3, steps: 3 });
    // The model's turn came, and the call has run for a second: kill the server under it.
    await eventually(
      async () => h.stub.requests.length,
      (n) => n > asked,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    killAll(before);
    const { toolReturn } = await call;
    expect(toolReturn).toMatchObject({ status: 'success' });
    expect(toolReturn?.tool_return).toContain('Long running operation completed');
    const after = everythingProcesses();
    expect(after.length).toBeGreaterThan(0);
    expect(after.filter((pid) => before.includes(pid))).toEqual([]);
  });

  it('a server that dies at every call: after the retries the model reads an error, and the turn goes on', async () => {
    const crashing = scriptServer(
      'crashing-server.mjs',
      "server.tool('explode', 'Crashes the server that runs it.', async () => process.exit(1));",
    );
    const server = await register('crashing', {
      mcp_server_type: 'stdio',
      command: process.execPath,
      args: [crashing],
    });
    const { toolReturn, stopReason } = await callThroughModel(server.id!, 'explode', {});
    expect(toolReturn).toMatchObject({ status: 'error' });
    expect(toolReturn?.tool_return).toMatch(/^Error executing function explode: /);
    expect(stopReason).toBe('end_turn');
  });

  it('takes a Pydantic-style schema ($defs / $ref, a type list, anyOf) as Letta normalizes it, and calls the tool', async () => {
    const inputSchema = {
      $defs: {
        Passenger: {
          type: 'object',
          properties: { name: { type: 'string' }, age: { type: ['integer', 'null'] } },
          required: ['name'],
        },
      },
      type: 'object',
      properties: {
        passenger: { $ref: '#/$defs/Passenger' },
        seat: { anyOf: [{ type: 'string' }, { type: 'string' }, { type: 'null' }], default: null },
        fare_class: { type: ['string', 'number'] },
      },
      required: ['passenger'],
    };
    const script = scriptServer(
      'pydantic-style-server.mjs',
      // The low-level handlers: the SDK's McpServer would write the schema itself.
      `server.server.registerCapabilities({ tools: {} });`,
      `server.server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: 'book_flight', description: 'Books a flight.', inputSchema: ${JSON.stringify(inputSchema)} }] }));`,
      "server.server.setRequestHandler(CallToolRequestSchema, async (request) => ({ content: [{ type: 'text', text: 'booked ' + JSON.stringify(request.params.arguments) }] }));",
    );
    const server = await register('pydantic', {
      mcp_server_type: 'stdio',
      command: process.execPath,
      args: [script],
    });
    const tool = await toolOf(server.id!, 'book_flight');
    expect(tool.json_schema).toMatchObject({
      parameters: {
        properties: {
          passenger: {
            type: 'object',
            properties: { name: { type: 'string' }, age: { anyOf: [{ type: 'integer' }, { type: 'null' }] } },
            additionalProperties: false,
          },
          seat: { anyOf: [{ type: 'string' }, { type: 'null' }] },
          fare_class: { anyOf: [{ type: 'string' }, { type: 'number' }] },
        },
        required: ['passenger'],
      },
    });
    const { toolReturn } = await callThroughModel(server.id!, 'book_flight', {
      passenger: { name: 'Ada', age: 36 },
      fare_class: 'economy',
    });
    expect(toolReturn).toMatchObject({ status: 'success' });
    expect(toolReturn?.tool_return).toContain('booked {"passenger":{"name":"Ada","age":36}');
  });

  it('lists a tool whose schema stays invalid, with its health and reasons, and never offers it to a model', async () => {
    const tools = [
      {
        name: 'fine',
        description: 'Fine.',
        inputSchema: { type: 'object', properties: { x: { type: 'string' } } },
      },
      {
        name: 'broken',
        description: 'Broken.',
        inputSchema: { type: 'object', properties: { x: { type: 'banana' } } },
      },
    ];
    const script = scriptServer(
      'invalid-schema-server.mjs',
      `server.server.registerCapabilities({ tools: {} });`,
      `server.server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: ${JSON.stringify(tools)} }));`,
      "server.server.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: 'text', text: 'ok' }] }));",
    );
    const server = await register('invalid', {
      mcp_server_type: 'stdio',
      command: process.execPath,
      args: [script],
    });
    const broken = await toolOf(server.id!, 'broken');
    expect((broken as { health?: unknown }).health).toMatchObject({
      status: 'INVALID',
      reasons: [expect.stringContaining('banana')],
    });
    const fine = await toolOf(server.id!, 'fine');
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tool_ids: [fine.id!, broken.id!],
    });
    h.stub.enqueue({ text: 'ok' });
    await h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: 'hi' }] });
    const offered = h.stub.requests.at(-1)!.tools!.map((t) => t.function.name);
    expect(offered).toContain('fine');
    expect(offered).not.toContain('broken');
  });

  it('takes a 20 MiB result, and cuts it at the tool’s return_char_limit', async () => {
    const script = scriptServer(
      'big-result-server.mjs',
      "server.tool('flood', 'Answers 20 MiB.', async () => ({ content: [{ type: 'text', text: 'x'.repeat(20 * 1024 * 1024) }] }));",
    );
    const server = await register('flood', {
      mcp_server_type: 'stdio',
      command: process.execPath,
      args: [script],
    });
    const flood = await toolOf(server.id!, 'flood');
    const run = await h.client.mcpServers.tools.run(flood.id!, { mcp_server_id: server.id!, args: {} });
    expect(run.status).toBe('success');
    expect(String(run.func_return).length).toBeLessThan(flood.return_char_limit! + 500);
    const { toolReturn } = await callThroughModel(server.id!, 'flood', {});
    expect(toolReturn).toMatchObject({ status: 'success' });
    expect(toolReturn?.tool_return).toContain('[NOTE: function output was truncated');
  });

  it("ends a call that outlives the tool's timeout with a clear error", async () => {
    const server = await register('everything-slow', stdioConfig('everything', ['stdio']));
    const slow = await toolOf(server.id!, 'trigger-long-running-operation');
    await h.client.tools.update(slow.id!, { metadata_: { timeout_seconds: 1 } });
    const started = Date.now();
    const { toolReturn } = await callThroughModel(server.id!, 'trigger-long-running-operation', {
      duration: 10,
      steps: 10,
    });
    expect(toolReturn?.status).toBe('error');
    expect(toolReturn?.tool_return).toContain('timed out after 1.0 seconds');
    expect(Date.now() - started).toBeLessThan(8_000);
  });

  describe('results as the server meant them', () => {
    const forecastSchema = {
      type: 'object',
      properties: { city: { type: 'string' }, celsius: { type: 'number' } },
      required: ['city', 'celsius'],
    };
    const countSchema = { type: 'object', properties: { n: { type: 'integer' } } };
    const unreadableSchema = { type: 'object', properties: { n: { type: 'banana' } } };
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64');
    const large = Buffer.concat([Buffer.from('ffd8ffe0', 'hex'), Buffer.alloc(1996, 7)]).toString('base64');
    const svg = Buffer.from('<svg/>').toString('base64');
    const notAnImage = Buffer.from('plain text').toString('base64');
    const richSchema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { address: { $anchor: 'addr', type: 'object', properties: { street: { type: 'string' } } } },
      properties: { home: { $ref: '#/$defs/address' }, kind: { type: 'string' } },
      if: { properties: { kind: { const: 'pro' } } },
      then: { required: ['home'] },
      additionalProperties: false,
    };
    const tools = [
      { name: 'rich', inputSchema: richSchema },
      { name: 'forecast', inputSchema: { type: 'object' }, outputSchema: forecastSchema },
      { name: 'forecast_broken', inputSchema: { type: 'object' }, outputSchema: forecastSchema },
      { name: 'forecast_textual', inputSchema: { type: 'object' }, outputSchema: forecastSchema },
      { name: 'untyped', inputSchema: { type: 'object' } },
      {
        name: 'counted',
        inputSchema: { type: 'object' },
        outputSchema: { ...countSchema, $schema: 'https://json-schema.org/draft/2020-12/schema' },
      },
      { name: 'unreadable', inputSchema: { type: 'object' }, outputSchema: unreadableSchema },
      { name: 'media', inputSchema: { type: 'object' } },
      { name: 'ask_model', inputSchema: { type: 'object' } },
    ];
    const results = {
      forecast: {
        content: [{ type: 'text', text: 'Oslo: 4 degrees' }],
        structuredContent: { city: 'Oslo', celsius: 4 },
      },
      forecast_broken: {
        content: [{ type: 'text', text: 'Oslo: cold' }],
        structuredContent: { city: 'Oslo', celsius: 'cold' },
      },
      forecast_textual: { content: [{ type: 'text', text: 'Oslo: 4 degrees' }] },
      untyped: { content: [{ type: 'text', text: 'n=3' }], structuredContent: { n: 3 } },
      counted: { content: [], structuredContent: { n: 3 } },
      unreadable: { content: [], structuredContent: { n: 3 } },
      media: {
        content: [
          { type: 'image', data: png, mimeType: 'image/png' },
          { type: 'image', data: large, mimeType: 'image/jpeg' },
          { type: 'image', data: svg, mimeType: 'image/svg+xml' },
          { type: 'image', data: notAnImage, mimeType: 'image/png' },
          { type: 'audio', data: png, mimeType: 'audio/wav' },
          {
            type: 'resource',
            resource: { uri: 'file:///notes.txt', mimeType: 'text/plain', text: 'the notes' },
          },
          {
            type: 'resource',
            resource: { uri: 'file:///blob.bin', mimeType: 'application/octet-stream', blob: png },
          },
          { type: 'resource', resource: { uri: 'file:///chart.png', mimeType: 'image/png', blob: png } },
          { type: 'resource_link', uri: 'file:///more.txt', name: 'more', mimeType: 'text/plain' },
        ],
      },
    };
    let serverId: string;
    beforeEach(async () => {
      const script = scriptServer(
        'results-server.mjs',
        `server.server.registerCapabilities({ tools: {} });`,
        `server.server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: ${JSON.stringify(tools)} }));`,
        `const results = ${JSON.stringify(results)};`,
        // A tool that asks the client for a model completion mid-call, and reports how that went.
        'async function askModel() {',
        "  const message = { role: 'user', content: { type: 'text', text: 'hi' } };",
        '  try {',
        '    await server.server.createMessage({ messages: [message], maxTokens: 10 });',
        "    return { content: [{ type: 'text', text: 'sampled' }] };",
        '  } catch (error) {',
        "    return { content: [{ type: 'text', text: 'sampling refused: ' + error.message }], isError: true };",
        '  }',
        '}',
        'server.server.setRequestHandler(CallToolRequestSchema, async (request) =>',
        "  request.params.name === 'ask_model' ? askModel() : results[request.params.name]);",
      );
      const server = await register('results', {
        mcp_server_type: 'stdio',
        command: process.execPath,
        args: [script],
      });
      serverId = server.id!;
    });
    const modelRead = (seenByModel: unknown) => JSON.parse(String(seenByModel)).message as string;

    it('keeps the input schema as listed beside the normalized form models get', async () => {
      const rich = await toolOf(serverId, 'rich');
      expect(rich.metadata_).toMatchObject({ mcp: { input_schema: richSchema } });
      const parameters = rich.json_schema!.parameters as Record<string, unknown>;
      expect(parameters).not.toHaveProperty('$defs');
      expect(parameters).not.toHaveProperty('$schema');
      expect(parameters.properties).toMatchObject({ home: { properties: { street: { type: 'string' } } } });
    });

    it('keeps the output schema, and gives the model a structured result that fits it as JSON', async () => {
      const forecast = await toolOf(serverId, 'forecast');
      expect(forecast.metadata_).toMatchObject({ mcp: { output_schema: forecastSchema } });
      const { toolReturn, seenByModel } = await callThroughModel(serverId, 'forecast', {});
      expect(toolReturn).toMatchObject({ status: 'success', tool_return: '{"city":"Oslo","celsius":4}' });
      expect(JSON.parse(modelRead(seenByModel))).toEqual({ city: 'Oslo', celsius: 4 });
    });

    it('makes a structured result that does not fit the output schema an error naming the mismatch', async () => {
      const { toolReturn, seenByModel } = await callThroughModel(serverId, 'forecast_broken', {});
      expect(toolReturn?.status).toBe('error');
      expect(toolReturn?.tool_return).toMatch(
        /does not match the tool's output schema: .*celsius.* must be number/,
      );
      expect(modelRead(seenByModel)).toBe(toolReturn?.tool_return);
    });

    it('makes a result without structured content an error when the tool has an output schema', async () => {
      const { toolReturn } = await callThroughModel(serverId, 'forecast_textual', {});
      expect(toolReturn?.status).toBe('error');
      expect(toolReturn?.tool_return).toContain('has an output schema but returned no structured content');
    });

    it('checks against a 2020-12 schema with its $schema, and takes results unchecked when the schema cannot be read', async () => {
      for (const name of ['counted', 'unreadable'])
        expect((await callThroughModel(serverId, name, {})).toolReturn).toMatchObject({
          status: 'success',
          tool_return: '{"n":3}',
        });
    });

    it('prefers the structured result to its text copy when the tool has no output schema', async () => {
      const { toolReturn } = await callThroughModel(serverId, 'untyped', {});
      expect(toolReturn).toMatchObject({ status: 'success', tool_return: '{"n":3}' });
    });

    it("gives images as Letta's return parts, describes audio, other binary resources and images no model takes (by type, bytes or size), and inlines text resources", async () => {
      const { toolReturn, response, seenByModel, agent } = await callThroughModel(serverId, 'media', {});
      const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } };
      const described = [
        '[image image/jpeg, 2000 bytes, not shown]',
        '[image image/svg+xml, 6 bytes, not shown]',
        '[image image/png, 10 bytes, not shown]',
        '[audio audio/wav, 16 bytes, not shown]',
        'the notes',
        '[resource file:///blob.bin application/octet-stream, 16 bytes, not shown]',
      ];
      const link = '[resource link file:///more.txt text/plain]';
      const shown = response.messages.find((m) => m.message_type === 'tool_return_message') as unknown as {
        tool_returns: { tool_return: unknown }[];
      };
      expect(shown.tool_returns[0].tool_return).toEqual([
        image,
        ...described.map((text) => ({ type: 'text', text })),
        image,
        { type: 'text', text: link },
      ]);
      // Letta's text form (Chat Completions reads it): the text parts, then a note of the images.
      const text = `${[...described, link].join('\n')} [2 images omitted]`;
      expect(toolReturn?.tool_return).toBe(text);
      expect(modelRead(seenByModel)).toBe(text);
      // As stored: listed again, the same parts.
      const listed = (await h.client.agents.messages.list(agent.id)).getPaginatedItems();
      expect(listed.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
        tool_return: text,
        tool_returns: shown.tool_returns,
      });
    });

    it('refuses a sampling request at once, with an error the tool result shows', async () => {
      const started = Date.now();
      const { toolReturn } = await callThroughModel(serverId, 'ask_model', {});
      expect(toolReturn?.status).toBe('error');
      expect(toolReturn?.tool_return).toMatch(/sampling refused: .*does not offer sampling/);
      expect(Date.now() - started).toBeLessThan(5_000);
    });
  });
});
