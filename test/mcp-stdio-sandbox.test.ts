import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import type { McpServerCreateParams } from '@letta-ai/letta-client/resources/mcp-servers/mcp-servers';
import pino from 'pino';
import { insertMcpServer, recordMcpConnection } from '../src/db/mcp-servers';
import { newId } from '../src/ids';
import { syncMcpTools } from '../src/mcp/tool-sync';
import { pythonAlias } from '../src/mcp/stdio-sandbox';
import { projectRoot } from '../src/paths';
import { uniqueSuffix } from './helpers/env';
import { mcpServerFile, stdioConfig } from './helpers/mcp-servers';
import { startTestServer, type TestServer } from './helpers/server';

type Config = McpServerCreateParams['config'];

const PROBE_SERVER = path.join(projectRoot, 'test', 'fixtures', 'mcp', 'probe_server.py');

/** The whole server with these settings, and the official client on it, for a describe block. */
function useServer(env: Record<string, string>, log?: pino.Logger) {
  const harness = {} as { server: TestServer; client: Letta };
  beforeAll(async () => {
    harness.server = await startTestServer({ MCP_CONNECT_TIMEOUT_MS: '10000', ...env }, log);
    harness.client = new Letta({ baseURL: harness.server.url, apiKey: 'unused', maxRetries: 0 });
  });
  // Tool names are unique: a server left registered would rename the next one's tools (<server>__<tool>).
  afterEach(async () => {
    for (const server of await harness.client.mcpServers.list())
      await harness.client.mcpServers.delete(server.id!);
  });
  afterAll(() => harness.server?.stopAll());
  return harness;
}

/** Registers a server, then runs its tools by name: what each returned, and whether it failed. */
async function registered(client: Letta, config: Config) {
  const server = await client.mcpServers.create({ server_name: `s-${uniqueSuffix()}`, config });
  const tools = await client.mcpServers.tools.list(server.id!);
  const run = async (name: string, args: Record<string, unknown> = {}) => {
    const tool = tools.find((t) => t.name === name)!;
    const result = await client.mcpServers.tools.run(tool.id!, { mcp_server_id: server.id!, args });
    return { status: result.status, text: String(result.func_return) };
  };
  return { server, tools, run };
}

/** The answer's status and `detail` of a request the client rejected. */
const refusal = (attempt: Promise<unknown>) =>
  attempt.then(
    () => ({ status: 200, detail: '' }),
    (error: { status: number; error: { detail: string } }) => ({
      status: error.status,
      detail: error.error.detail,
    }),
  );

/**
 * A stdio MCP server's command runs in the MCP sandbox (MCP_STDIO=sandboxed, the default): registered
 * through the API, it cannot write to the host, read DATA_DIR, see the server's environment or
 * processes, nor take more memory and processes than its limits; the reference servers still work.
 */
describe('stdio MCP servers in the sandbox (MCP_STDIO=sandboxed)', () => {
  // A host folder shown to the servers (MCP_STDIO_READ_ONLY_PATHS), holding the probe server, a file
  // they may read, and DATA_DIR, which they must not see even there. Everything is readable by every
  // uid: only the sandbox keeps DATA_DIR from them.
  const shown = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-stdio-shown-'));
  const dataDir = path.join(shown, 'data');
  const unshown = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-stdio-unshown-'));
  fs.mkdirSync(dataDir);
  for (const dir of [shown, dataDir, unshown]) fs.chmodSync(dir, 0o755);
  fs.writeFileSync(path.join(dataDir, 'secret.txt'), 'the-secret', { mode: 0o644 });
  fs.writeFileSync(path.join(shown, 'visible.txt'), 'shown to servers', { mode: 0o644 });
  fs.copyFileSync(PROBE_SERVER, path.join(shown, 'probe_server.py'));
  const probe: Config = {
    mcp_server_type: 'stdio',
    command: 'python3',
    args: [path.join(shown, 'probe_server.py')],
    env: { GREETING: 'hello' },
  };
  // Where an escape would leave a file on the host; removed after, should one get there.
  const name = `escaped-${uniqueSuffix()}`;
  const hostTargets = [os.tmpdir(), shown, dataDir, projectRoot, os.homedir()].map((dir) =>
    path.join(dir, name),
  );
  // What the reference servers write to their /tmp.
  const memoryFile = `/tmp/${name}.jsonl`;
  const textFile = `/tmp/${name}.txt`;

  const h = useServer({
    DATA_DIR: dataDir,
    MCP_STDIO_READ_ONLY_PATHS: shown,
    MCP_STDIO_MAX_PROCESSES: '64',
    MCP_STDIO_MEMORY_BYTES: String(256 * 1024 * 1024),
  });
  afterAll(() => {
    [...hostTargets, memoryFile, textFile].forEach((file) => fs.rmSync(file, { force: true }));
    for (const dir of [shown, unshown]) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a command that writes to the host leaves no file there', async () => {
    const writes = hostTargets.map((file) => `echo x > ${file}`).join('; ');
    const server = await h.client.mcpServers.create({
      server_name: 'writer',
      config: { mcp_server_type: 'stdio', command: 'sh', args: ['-c', `${writes}; exit 1`] },
    });
    // Stored, and what the shell said on stderr is its connection's error: the host's folders are
    // read-only or not there.
    const { connection } = server as unknown as { connection: { status: string; last_error: string } };
    expect(connection.status).toBe('failed');
    expect(connection.last_error).toMatch(/Read-only file system/);
    expect(connection.last_error).toMatch(/Directory nonexistent|No such file/);
    expect(hostTargets.filter((file) => fs.existsSync(file))).toEqual([]);
  });

  it('a server reads no DATA_DIR nor project file, and writes only to its own tmpfs, which the host never sees', async () => {
    const { run } = await registered(h.client, probe);
    expect(await run('read_file', { path: path.join(dataDir, 'secret.txt') })).toEqual({
      status: 'error',
      text: expect.stringMatching(/^FileNotFoundError: /),
    });
    expect(await run('list_dir', { path: dataDir })).toEqual({ status: 'success', text: '[]' });
    expect(await run('read_file', { path: path.join(projectRoot, 'package.json') })).toMatchObject({
      status: 'error',
    });
    expect(await run('read_file', { path: path.join(shown, 'visible.txt') })).toEqual({
      status: 'success',
      text: 'shown to servers',
    });

    for (const file of [path.join(shown, name), '/usr/escaped', '/escaped', '/etc/escaped']) {
      const written = await run('write_file', { path: file, text: 'x' });
      expect(written).toEqual({ status: 'error', text: expect.stringMatching(/Read-only file system/) });
    }
    for (const file of [path.join('/tmp', name), `/work/${name}`]) {
      expect(await run('write_file', { path: file, text: 'kept' })).toMatchObject({ status: 'success' });
      expect(await run('read_file', { path: file })).toMatchObject({ text: 'kept' });
    }
    expect(hostTargets.filter((file) => fs.existsSync(file))).toEqual([]);
  });

  it("sees only its config's environment, only its own processes, as nobody", async () => {
    const { run } = await registered(h.client, probe);
    const env = JSON.parse((await run('environment')).text) as Record<string, string>;
    // Besides its config's: a PATH and a HOME, the working folder bwrap names, and Python's own locale.
    expect(env).toEqual({
      GREETING: 'hello',
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: '/work',
      PWD: '/work',
      LC_CTYPE: 'C.UTF-8',
    });
    const seen = JSON.parse((await run('processes')).text) as { pid: number; uid: number; pids: number[] };
    // Its own PID namespace: bwrap's init is 1, the server a low pid, and nothing of the host's.
    expect(seen.pid).toBeLessThan(10);
    expect(Math.max(...seen.pids)).toBeLessThan(10);
    expect(seen.pids).not.toContain(process.pid);
    expect(seen.uid).toBe(65534);
  });

  it('runs out of processes at MCP_STDIO_MAX_PROCESSES, and a child past MCP_STDIO_MEMORY_BYTES is killed', async () => {
    const { run } = await registered(h.client, probe);
    const children = JSON.parse((await run('start_children', { count: 200 })).text);
    expect(children.started).toBeLessThan(64);
    expect(children.refusal).toMatch(/BlockingIOError|Resource temporarily unavailable/);
    const allocated = JSON.parse((await run('allocate', { megabytes: 512 })).text);
    expect(allocated.returncode).not.toBe(0);
    expect(await run('read_file', { path: path.join(shown, 'visible.txt') })).toMatchObject({
      status: 'success',
    });
  });

  it("runs a config's bare `python` as python3 where the PATH has no python, as Letta's configs say it", async () => {
    const { tools } = await registered(h.client, { ...probe, command: 'python' });
    expect(tools.length).toBeGreaterThan(0);
  });

  it('server-everything lists its tools and runs them, in the sandbox', async () => {
    const { tools, run } = await registered(h.client, stdioConfig('everything', ['stdio']));
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'get-sum', 'get-env']));
    expect(await run('echo', { message: 'hi' })).toEqual({ status: 'success', text: 'Echo: hi' });
    expect(JSON.parse((await run('get-env')).text)).toMatchObject({ HOME: '/work' });
  });

  it('server-memory keeps what it is told in its sandbox, not on the host', async () => {
    const { run } = await registered(h.client, stdioConfig('memory', [], { MEMORY_FILE_PATH: memoryFile }));
    const entities = [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }];
    expect(await run('create_entities', { entities })).toMatchObject({ status: 'success' });
    expect((await run('read_graph')).text).toContain('wrote the first program');
    expect(fs.existsSync(memoryFile)).toBe(false);
  });

  it("server-filesystem works on a folder of the sandbox's own", async () => {
    const { run } = await registered(h.client, stdioConfig('filesystem', ['/tmp']));
    expect(await run('write_file', { path: textFile, content: 'line one' })).toMatchObject({
      status: 'success',
    });
    // Its structured result, checked against the tool's output schema, is what the model reads.
    expect(await run('read_text_file', { path: textFile })).toEqual({
      status: 'success',
      text: '{"content":"line one"}',
    });
    expect(fs.existsSync(textFile)).toBe(false);
  });

  it('refuses a command the sandbox does not show, or cannot find, saying what to do (400)', async () => {
    const script = `#!/bin/sh\nexec python3 ${path.join(shown, 'probe_server.py')}\n`;
    for (const dir of [unshown, dataDir]) {
      fs.writeFileSync(path.join(dir, 'server.sh'), script, { mode: 0o755 });
      const config: Config = { mcp_server_type: 'stdio', command: path.join(dir, 'server.sh'), args: [] };
      const attempt = await refusal(h.client.mcpServers.create({ server_name: 'unshown', config }));
      expect(attempt.status).toBe(400);
      expect(attempt.detail).toMatch(/is not visible in the MCP sandbox.*MCP_STDIO_READ_ONLY_PATHS/);
    }
    const missing: Config = { mcp_server_type: 'stdio', command: 'no-such-command', args: [] };
    const attempt = await refusal(h.client.mcpServers.create({ server_name: 'missing', config: missing }));
    expect(attempt).toEqual({
      status: 400,
      detail: expect.stringMatching(/no-such-command is not found on the MCP sandbox's PATH/),
    });
    expect(await h.client.mcpServers.list()).toEqual([]);
  });

  it('refuses a script argument the sandbox does not show, or that does not exist (400); a shown one runs', async () => {
    const stdioServer = path.join(path.dirname(mcpServerFile('everything')), 'transports', 'stdio.js');
    for (const dir of [unshown, dataDir, shown])
      fs.writeFileSync(path.join(dir, 'server.mjs'), `import ${JSON.stringify(stdioServer)};\n`, {
        mode: 0o644,
      });
    const nodeServer = (...args: string[]): Config => ({
      mcp_server_type: 'stdio',
      command: process.execPath,
      args,
    });
    const create = (config: Config) => refusal(h.client.mcpServers.create({ server_name: 'script', config }));
    for (const dir of [unshown, dataDir]) {
      expect(await create(nodeServer(path.join(dir, 'server.mjs')))).toEqual({
        status: 400,
        detail: expect.stringMatching(
          /server\.mjs is not visible in the MCP sandbox.*MCP_STDIO_READ_ONLY_PATHS/,
        ),
      });
    }
    expect(await create(nodeServer('/no/such/server.mjs'))).toEqual({
      status: 400,
      detail: expect.stringMatching(/the argument \/no\/such\/server\.mjs does not exist/),
    });
    expect(await h.client.mcpServers.list()).toEqual([]);
    // Arguments that are not host files pass as they are.
    const shownScript = nodeServer(
      path.join(shown, 'server.mjs'),
      '--port=3000',
      'https://example.com/a',
      '/tmp',
    );
    const { run } = await registered(h.client, shownScript);
    expect(await run('echo', { message: 'hi' })).toEqual({ status: 'success', text: 'Echo: hi' });
  });
});

describe('pythonAlias', () => {
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-python-alias-'));
  afterAll(() => fs.rmSync(bin, { recursive: true, force: true }));
  const make = (name: string) => fs.writeFileSync(path.join(bin, name), '#!/bin/sh\n', { mode: 0o755 });

  it('names python3 for python only while the PATH has python3 and no python', () => {
    expect(pythonAlias('python', bin)).toBe('python');
    make('python3');
    expect(pythonAlias('python', `relative:${bin}`)).toBe('python3');
    expect(pythonAlias('node', bin)).toBe('node');
    make('python');
    expect(pythonAlias('python', bin)).toBe('python');
  });
});

describe('MCP_STDIO=off', () => {
  const h = useServer({ MCP_STDIO: 'off' });

  it("refuses to register or update stdio servers (400), and a stored one's tools fail clearly", async () => {
    const attempt = await refusal(
      h.client.mcpServers.create({ server_name: 'off', config: stdioConfig('everything', ['stdio']) }),
    );
    expect(attempt.status).toBe(400);
    expect(attempt.detail).toMatch(/stdio MCP servers are turned off on this server \(MCP_STDIO=off\)/);

    // A server stored while stdio was allowed.
    const id = newId('mcp_server');
    await insertMcpServer(h.server.db, {
      id,
      server_name: 'stored',
      config: stdioConfig('everything', ['stdio']),
    });
    await syncMcpTools(h.server.db, id, [{ name: 'echo', inputSchema: { type: 'object', properties: {} } }]);
    await recordMcpConnection(h.server.db, { id, config_version: 1 }, null);
    const echo = (await h.client.mcpServers.tools.list(id))[0];
    const result = await h.client.mcpServers.tools.run(echo.id!, { mcp_server_id: id, args: {} });
    expect(result.status).toBe('error');
    expect(result.func_return).toMatch(
      /^Error executing function echo: McpStdioRefusedError: .*MCP_STDIO=off/,
    );
    const update = await refusal(
      h.client.mcpServers.update(id, {
        config: { mcp_server_type: 'stdio', command: null, args: ['stdio'], env: null },
      }),
    );
    expect(update.status).toBe(400);
  });
});

describe('MCP_STDIO=host', () => {
  const warnings: string[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line).msg) });
  const h = useServer({ MCP_STDIO: 'host' }, log);

  it('runs stdio servers on the host, as before, with a loud warning at start-up', async () => {
    const { run } = await registered(h.client, stdioConfig('everything', ['stdio']));
    expect(await run('echo', { message: 'hi' })).toEqual({ status: 'success', text: 'Echo: hi' });
    expect(JSON.parse((await run('get-env')).text).HOME).not.toBe('/work');
    expect(warnings).toContainEqual(
      expect.stringMatching(/stdio MCP servers run WITHOUT isolation.*MCP_STDIO=host/),
    );
  });
});

describe('a host where bubblewrap does not work', () => {
  const h = useServer({ SANDBOX_BWRAP_PATH: '/nonexistent/bwrap' });

  it('refuses stdio servers with the reason, never running them unconfined', async () => {
    const attempt = await refusal(
      h.client.mcpServers.create({ server_name: 'nowhere', config: stdioConfig('everything', ['stdio']) }),
    );
    expect(attempt.status).toBe(400);
    expect(attempt.detail).toMatch(
      /the MCP sandbox \(bubblewrap\) does not work on this host \(.*\/nonexistent\/bwrap.*\): .*MCP_STDIO=host/,
    );
  });
});
