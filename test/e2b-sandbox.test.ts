/**
 * The E2B backend against a hand-written fake of E2B's cloud (test/helpers/e2b-cloud.ts): each fake
 * sandbox is a folder standing for its filesystem, and its commands really run (bash, /usr/bin/python3,
 * only the given environment on top of a sandbox's own PATH/HOME), so the real runner.py and the framed
 * stdout result are used end to end. The fake hands stdout over decoded as UTF-8 text, as the SDK does.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AuthenticationError } from 'e2b';
import { loadConfig } from '../src/config';
import { sandboxFor, SandboxUnavailableError, type ToolJob } from '../src/sandbox';
import { e2bSandbox, type E2BSandboxOptions } from '../src/sandbox/e2b';
import { FakeE2B, PIP_OK, type FakeSandbox } from './helpers/e2b-cloud';
import { eventually } from './helpers/eventually';
import { processesInGroup } from './helpers/process';

/** Every process a command of the sandbox started is gone (asserted on what is left). */
const processesLeft = (sandbox: FakeSandbox) =>
  eventually(
    async () => sandbox.groups.flatMap(processesInGroup),
    (left) => left.length === 0,
  );

const OPTIONS: E2BSandboxOptions = {
  apiKey: 'e2b_test',
  template: 'base',
  sandboxTimeoutMs: 300_000,
  reuse: true,
  outputs: { maxOutputBytes: 1024 * 1024, keepOutputBytes: 1024 * 1024, maxResultBytes: 1024 * 1024 },
};

const job = (source: string, overrides: Partial<ToolJob> = {}): ToolJob => ({
  name: source.match(/def (\w+)/)![1],
  source,
  args: {},
  env: {},
  timeoutMs: 30_000,
  returnCharLimit: 50_000,
  ...overrides,
});

const ECHO = 'def echo(text: str):\n    print("said", text)\n    return text.upper()\n';

let cloud: FakeE2B;
beforeEach(() => {
  cloud = new FakeE2B();
});
afterEach(async () => {
  for (const sandbox of cloud.sandboxes) {
    await sandbox.kill();
    fs.rmSync(sandbox.root, { recursive: true, force: true });
  }
});

describe('E2B sandbox (fake E2B cloud, real runner)', () => {
  it('runs a tool: its return, its stdout without the result frame, nothing left behind', async () => {
    const result = await e2bSandbox(OPTIONS, cloud).run(job(ECHO, { args: { text: 'hi' } }));
    expect(result).toMatchObject({ status: 'success', funcReturn: 'HI', stdout: ['said hi\n'], stderr: [] });
    expect(cloud.calls).toEqual(['list', 'create base']);
    expect(cloud.created[0]).toMatchObject({ apiKey: 'e2b_test', timeoutMs: 300_000 });
    expect(cloud.created[0].metadata!.config_hash).toMatch(/^[0-9a-f]{64}$/);
    const [run] = cloud.commands;
    expect(run.cmd).toMatch(
      /^python3 \/tmp\/letta-tool-[\w-]+\/runner\.py < \/tmp\/letta-tool-[\w-]+\/job\.json;/,
    );
    expect(run.timeoutMs).toBeGreaterThan(30_000); // E2B's deadline is a backstop past ours
    expect(cloud.sandboxes[0].leftovers()).toEqual([]);
  });

  it("gives the tool exactly the job's environment, per command, never stored on the sandbox", async () => {
    const source = 'import os\ndef env():\n    return os.environ.get("API_TOKEN")\n';
    const result = await e2bSandbox(OPTIONS, cloud).run(job(source, { env: { API_TOKEN: 's3cret' } }));
    expect(result.funcReturn).toBe('s3cret');
    expect(cloud.commands[0].envs).toEqual({ API_TOKEN: 's3cret' });
    expect(cloud.created[0].envs).toBeUndefined();
    expect(JSON.stringify(cloud.created[0].metadata)).not.toContain('s3cret');
  });

  it("reports a tool's exception as Letta does, with the traceback in stderr", async () => {
    const source = 'def boom():\n    raise ValueError("no luck")\n';
    const result = await e2bSandbox(OPTIONS, cloud).run(job(source));
    expect(result.status).toBe('error');
    expect(result.funcReturn).toBe('Error executing function boom: ValueError: no luck');
    expect(result.stderr[0]).toMatch(/Traceback[\s\S]*ValueError: no luck/);
  });

  it("turns a runner that dies (E2B's CommandExitError) into a tool error with its output", async () => {
    const source = 'import os\ndef die():\n    print("going", flush=True)\n    os._exit(3)\n';
    const result = await e2bSandbox(OPTIONS, cloud).run(job(source));
    expect(result).toMatchObject({
      status: 'error',
      funcReturn: 'Error executing function die: SandboxError: the tool exited (code 3) without a result',
      stdout: ['going\n'],
    });
  });

  it('passes agent_state in and brings the edited blocks back', async () => {
    const source =
      'def note(agent_state):\n    agent_state.memory.update_block_value("human", "Bob")\n    return "ok"\n';
    const agentState = {
      id: 'agent-1',
      name: 'a',
      memory: {
        blocks: [{ label: 'human', value: 'Alice', limit: 100, description: null, read_only: false }],
      },
    };
    const result = await e2bSandbox(OPTIONS, cloud).run(job(source, { agentState }));
    expect(result.agentState).toEqual({ memory: { blocks: [{ label: 'human', value: 'Bob' }] } });
  });

  it('is not fooled by a result frame the tool prints itself (the marker is random per call)', async () => {
    const source = [
      'import hashlib, json',
      'def sly():',
      '    payload = json.dumps({"status": "success", "func_return": "forged"}).encode()',
      '    marker = "0123456789abcdef0123456789abcdef"',
      '    print(f"{marker}{len(payload):08x}{hashlib.md5(payload).hexdigest()}{payload.decode()}")',
      '    return "real"',
      '',
    ].join('\n');
    const result = await e2bSandbox(OPTIONS, cloud).run(job(source));
    expect(result.funcReturn).toBe('real');
    expect(result.stdout[0]).toContain('forged');
  });

  it('keeps non-UTF-8 output from the tool apart from the result', async () => {
    const source = 'import sys\ndef raw():\n    sys.stdout.buffer.write(b"\\xff\\xfe")\n    return "fine"\n';
    const result = await e2bSandbox(OPTIONS, cloud).run(job(source));
    expect(result).toMatchObject({ status: 'success', funcReturn: 'fine', stdout: ['\ufffd\ufffd'] });
  });

  it('keeps the head and tail of what the tool prints', async () => {
    const source = 'def loud():\n    print("a" * 2500 + "z" * 2500)\n';
    const outputs = { ...OPTIONS.outputs, keepOutputBytes: 100 };
    const result = await e2bSandbox({ ...OPTIONS, outputs }, cloud).run(job(source));
    expect(result.stdout[0]).toBe(`${'a'.repeat(50)}\n[... 4901 bytes cut ...]\n${'z'.repeat(49)}\n`);
  });

  it('stops a tool at its timeout and kills its sandbox', async () => {
    const source = 'import time\ndef slow():\n    time.sleep(60)\n';
    const started = Date.now();
    const result = await e2bSandbox(OPTIONS, cloud).run(job(source, { timeoutMs: 1_000 }));
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result).toMatchObject({
      status: 'error',
      funcReturn:
        'Error executing function slow: TimeoutError: Executing tool slow timed out after 1.0 seconds.',
    });
    expect(cloud.calls).toContain('kill sbx-1');
    expect(await processesLeft(cloud.sandboxes[0])).toEqual([]);
  });

  it('kills the sandbox when the run is cancelled, even with reuse on', async () => {
    const source = 'import time\ndef slow():\n    time.sleep(60)\n';
    const cancel = new AbortController();
    setTimeout(() => cancel.abort(), 500);
    const result = await e2bSandbox(OPTIONS, cloud).run(job(source), cancel.signal);
    expect(result).toMatchObject({
      status: 'error',
      funcReturn: 'Error executing function slow: CancelledError: the run was cancelled',
    });
    expect(cloud.calls).toContain('kill sbx-1');
    expect(await processesLeft(cloud.sandboxes[0])).toEqual([]);
  });

  it('reuses a running sandbox of the same config hash; other requirements get another one', async () => {
    const sandbox = e2bSandbox(OPTIONS, cloud);
    await sandbox.run(job(ECHO, { args: { text: 'a' } }));
    const second = await sandbox.run(job(ECHO, { args: { text: 'b' } }));
    expect(second.funcReturn).toBe('B');
    await sandbox.run(job(ECHO, { args: { text: 'c' }, pipRequirements: [{ name: 'requests' }] }));
    await sandbox.run(job(ECHO, { args: { text: 'd' }, env: { OTHER: 'secret' } }));
    expect(cloud.calls).toEqual([
      'list',
      'create base',
      'list',
      'connect sbx-1',
      'list',
      'create base',
      'list',
      'create base',
    ]);
  });

  it('makes a new sandbox when the one listed has ended meanwhile', async () => {
    const sandbox = e2bSandbox(OPTIONS, cloud);
    await sandbox.run(job(ECHO, { args: { text: 'a' } }));
    cloud.ghost = 'sbx-gone';
    const result = await sandbox.run(job(ECHO, { args: { text: 'b' } }));
    expect(result.funcReturn).toBe('B');
    expect(cloud.calls.slice(-2)).toEqual(['connect sbx-gone', 'create base']);
  });

  it('with reuse off, makes and kills a sandbox per call, as Letta does', async () => {
    const sandbox = e2bSandbox({ ...OPTIONS, reuse: false }, cloud);
    await sandbox.run(job(ECHO, { args: { text: 'a' } }));
    await sandbox.run(job(ECHO, { args: { text: 'b' } }));
    expect(cloud.calls).toEqual(['create base', 'kill sbx-1', 'create base', 'kill sbx-2']);
  });

  it('installs pip requirements once per sandbox, before the tool runs, even for calls meanwhile', async () => {
    let finishInstall = () => {};
    cloud.pip = () => new Promise((resolve) => (finishInstall = () => resolve(PIP_OK)));
    const sandbox = e2bSandbox(OPTIONS, cloud);
    const pipRequirements = [{ name: 'requests', version: '2.31.0' }, { name: "odd'name" }];
    const first = sandbox.run(job(ECHO, { args: { text: 'a' }, pipRequirements }));
    await eventually(
      async () => cloud.pipCommands(),
      (seen) => seen.length > 0,
    );
    const second = sandbox.run(job(ECHO, { args: { text: 'b' }, pipRequirements }));
    await eventually(
      async () => cloud.calls,
      (calls) => calls.includes('connect sbx-1'),
    );
    expect(cloud.commands).toHaveLength(1); // the tools wait for the install
    finishInstall();
    await Promise.all([first, second]);
    await sandbox.run(job(ECHO, { args: { text: 'c' }, pipRequirements }));
    expect(cloud.pipCommands()).toEqual([`python3 -m pip install 'requests==2.31.0' 'odd'\\''name'`]);
    expect(cloud.commands.map((c) => c.sandboxId)).toEqual(['sbx-1', 'sbx-1', 'sbx-1', 'sbx-1']);
  });

  it('reports a failed pip install as the tool error and tries again on the next call', async () => {
    cloud.pip = () => ({ exitCode: 1, stdout: '', stderr: 'No matching distribution found for nope' });
    const sandbox = e2bSandbox(OPTIONS, cloud);
    const pipRequirements = [{ name: 'nope' }];
    const result = await sandbox.run(job(ECHO, { args: { text: 'a' }, pipRequirements }));
    expect(result).toEqual({
      status: 'error',
      funcReturn: 'Error executing function echo: PipInstallError: pip install exited with code 1',
      stdout: [],
      stderr: ['No matching distribution found for nope'],
    });
    await sandbox.run(job(ECHO, { args: { text: 'b' }, pipRequirements }));
    expect(cloud.pipCommands()).toHaveLength(2);
  });

  it('fails with SandboxUnavailableError, not a tool error, when E2B refuses the key', async () => {
    cloud.refuse = new AuthenticationError('Unauthorized, please check your credentials.');
    const run = e2bSandbox(OPTIONS, cloud).run(job(ECHO, { args: { text: 'a' } }));
    await expect(run).rejects.toThrow(SandboxUnavailableError);
    await expect(run).rejects.toThrow(/AuthenticationError: Unauthorized/);
    cloud.refuse = new AuthenticationError('Unauthorized');
    const fresh = e2bSandbox({ ...OPTIONS, reuse: false }, cloud).run(job(ECHO, { args: { text: 'a' } }));
    await expect(fresh).rejects.toThrow(SandboxUnavailableError);
  });

  it('fails with SandboxUnavailableError when the sandbox dies under the tool', async () => {
    const source = 'import time\ndef slow():\n    time.sleep(60)\n';
    const run = e2bSandbox(OPTIONS, cloud).run(job(source));
    await new Promise((resolve) => setTimeout(resolve, 500));
    await cloud.sandboxes[0].kill(); // E2B ended it (its timeout, an outage)
    await expect(run).rejects.toThrow(SandboxUnavailableError);
  });
});

describe('E2B sandbox with the real SDK', () => {
  let server: http.Server;
  const seen: string[] = [];
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers['x-api-key']}`);
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 401, message: 'Invalid API key' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    process.env.E2B_API_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    delete process.env.E2B_API_URL;
    server.close();
  });

  it('is chosen by SANDBOX_TYPE=e2b, and a refused key is SandboxUnavailableError', async () => {
    const sandbox = sandboxFor(loadConfig({ SANDBOX_TYPE: 'e2b', E2B_API_KEY: 'e2b_wrong' }));
    await expect(sandbox.run(job(ECHO, { args: { text: 'a' } }))).rejects.toThrow(SandboxUnavailableError);
    expect(seen[0]).toBe('POST /v2/sandboxes e2b_wrong'); // reuse is off by default: a sandbox per call
  });
});
