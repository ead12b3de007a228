import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useAgentServer } from './helpers/agent-server';
import { sourceRunAnswer } from './helpers/tool-returns';
import { packGreetPackage } from './helpers/npm-package';

/** TypeScript custom tools run on node in the local sandbox (bubblewrap), with Letta's contract. */
describe('TypeScript tools in the local sandbox', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ts-tools-'));
  fs.chmodSync(dir, 0o755); // the sandbox's uid (nobody) reads the node_modules in it
  const envDir = path.join(dir, 'envs');
  const h = useAgentServer('openai', {
    TOOL_TIMEOUT_MS: '4000',
    SANDBOX_ENV_DIR: envDir,
    SANDBOX_NODE_MAX_OLD_SPACE_MB: '64',
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const post = async (route: string, body: Record<string, unknown>) => {
    const res = await fetch(`${h.server.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const run = (source: string, args: Record<string, unknown> = {}, more: Record<string, unknown> = {}) =>
    post('/v1/tools/run', { source_code: source, source_type: 'typescript', args, ...more });

  it('runs a typed tool and captures what it logs', async () => {
    const { status, body } = await run(
      [
        'interface Weather { city: string; temp: number }',
        'export function probe(city: string, temp: number = 21): Weather {',
        "  console.log('working on', city);",
        '  return { city, temp };',
        '}',
      ].join('\n'),
      { city: 'Oslo' },
    );
    expect(status).toBe(200);
    // Letta's ToolReturnMessage, the return as Python's str() shows it.
    const part = {
      tool_return: "{'city': 'Oslo', 'temp': 21}",
      status: 'success',
      tool_call_id: 'null',
      stdout: ['working on Oslo\n'],
      stderr: [],
    };
    expect(body).toEqual(sourceRunAnswer('probe', part));
  });

  it('awaits an async tool', async () => {
    const { body } = await run(
      'export async function probe(ms: number): Promise<string> {\n  await new Promise((done) => setTimeout(done, ms));\n  return `waited ${ms}`;\n}\n',
      { ms: 50 },
    );
    expect(body).toMatchObject({ status: 'success', tool_return: 'waited 50' });
  });

  it('passes the arguments in the order the function declares them, exported or not', async () => {
    const { body } = await run(
      [
        'const pad = (s: string) => `[${s}]`;',
        'function probe(first: string, second: number, third?: boolean) {',
        '  return [pad(first), second, third ?? null];',
        '}',
      ].join('\n'),
      { third: true, second: 2, first: 'a' },
    );
    expect(body).toMatchObject({ status: 'success', tool_return: "['[a]', 2, True]" });
  });

  it("turns a thrown error into Letta's error text, with the stack on stderr", async () => {
    const { body } = await run("export function probe(): never {\n  throw new RangeError('boom');\n}\n");
    expect(body.status).toBe('error');
    expect(body.tool_return).toBe('Error executing function probe: RangeError: boom');
    expect((body.stderr as string[])[0]).toMatch(/RangeError: boom\n\s+at probe/);
  });

  it('keeps the tool away from the server: its environment, the network, root', async () => {
    const { body } = await run(
      [
        "import net from 'node:net';",
        'export function probe(port: number): Promise<string> {',
        '  const seen = { uid: process.getuid!(), env: Object.keys(process.env).sort() };',
        '  return new Promise((resolve) => {',
        '    const answer = (network?: string) => resolve(JSON.stringify({ ...seen, network }));',
        "    const socket = net.connect(port, '127.0.0.1', () => answer('reached'));",
        "    socket.on('error', (error: NodeJS.ErrnoException) => answer(error.code));",
        '  });',
        '}',
      ].join('\n'),
      { port: Number(new URL(h.server.url).port) },
      { env_vars: { GREETING: 'hi' } },
    );
    const seen = JSON.parse(body.tool_return as string) as { uid: number; env: string[]; network: string };
    expect(seen.uid).toBe(65534);
    expect(seen.env).toEqual(['GREETING', 'HOME', 'PATH', 'PWD']);
    expect(seen.network).toMatch(/ENETUNREACH|ECONNREFUSED/);
  });

  it('kills a tool that runs past the timeout', async () => {
    const started = Date.now();
    const { body } = await run('export function probe(): void {\n  while (true) {}\n}\n');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(body).toMatchObject({
      status: 'error',
      tool_return:
        'Error executing function probe: TimeoutError: Executing tool probe timed out after 4.0 seconds.',
    });
  });

  it('stops a tool at its heap limit', async () => {
    const { body } = await run(
      'export function probe(): void {\n  const hog: number[][] = [];\n  while (true) hog.push(new Array(1e5).fill(1));\n}\n',
    );
    expect(body.status).toBe('error');
    expect((body.stderr as string[])[0]).toContain('heap limit');
  });

  it('imports its npm requirements, installed once into a read-only node_modules', async () => {
    const tarball = packGreetPackage(dir);
    const source =
      "import { greet } from 'tiny-greet';\nexport const probe = (name: string) => greet(name);\n";
    const requirements = { npm_requirements: [{ name: 'tiny-greet', version: `file:${tarball}` }] };
    const { body } = await run(source, { name: 'Ada' }, requirements);
    expect(body).toMatchObject({ status: 'success', tool_return: 'hi Ada' });
    const writes = await run(
      "import fs from 'node:fs';\nexport function probe() {\n  fs.writeFileSync('/node_modules/tiny-greet/index.js', '');\n}\n",
      {},
      requirements,
    );
    expect(writes.body.tool_return).toMatch(/^Error executing function probe: Error: EROFS/);
    expect(fs.readdirSync(envDir)).toEqual([expect.stringMatching(/^node-[0-9a-f]+$/)]);
  });

  it("reports requirements that do not install as the tool's error, in npm's words", async () => {
    const { body } = await run(
      'export function probe() {}\n',
      {},
      {
        npm_requirements: [{ name: 'tiny-missing', version: `file:${dir}/missing.tgz` }],
      },
    );
    expect(body.status).toBe('error');
    expect(body.tool_return).toMatch(
      /^Error executing function probe: ToolEnvironmentError: npm install tiny-missing@file:.* failed: .*ENOENT/,
    );
  });

  it('refuses source that does not compile, or lacks the function, when run and when created', async () => {
    const broken = 'export function probe(a: string {\n  return a;\n}\n';
    expect(await run(broken)).toMatchObject({
      status: 400,
      body: { detail: expect.stringMatching(/^The TypeScript source does not compile: \(1,33\): /) },
    });
    const json_schema = {
      name: 'probe',
      description: 'Probes.',
      parameters: { type: 'object', properties: {} },
    };
    const create = (source_code: string) =>
      post('/v1/tools', { source_code, source_type: 'typescript', json_schema });
    expect((await create(broken)).status).toBe(400);
    expect(await create('export function other() {}\n')).toMatchObject({
      status: 400,
      body: { detail: 'No function named probe at the top level of the source' },
    });
  });

  it('runs a TypeScript tool the model calls, with the agent id in its environment', async () => {
    const tool = await h.client.tools.create({
      source_type: 'typescript',
      source_code:
        'export function whoami(greeting: string): string {\n  return `${greeting} from ${process.env.LETTA_AGENT_ID}`;\n}\n',
      json_schema: {
        name: 'whoami',
        description: 'Says who runs it.',
        parameters: {
          type: 'object',
          properties: { greeting: { type: 'string', description: 'The greeting.' } },
          required: ['greeting'],
        },
      },
    });
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
    h.stub.enqueue({ toolCalls: [{ name: 'whoami', arguments: { greeting: 'Hello' } }] }, { text: 'Done.' });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Who are you?' }],
    });
    expect(response.messages.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'success',
      tool_return: `Hello from ${agent.id}`,
    });
  });
});
