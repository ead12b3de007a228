import fs from 'node:fs';
import { sandboxFor, type ToolJob } from '../src/sandbox';
import { useAgentServer } from './helpers/agent-server';
import { testConfig } from './helpers/env';
import { eventually } from './helpers/eventually';

/**
 * Nothing of one sandboxed call reaches the next, and nothing a tool sends back is unbounded: each
 * test is a tool that tries.
 */

/** Looks for what earlier calls left (files, environment, a patched module, SysV IPC, processes), then leaves all that itself. */
const SPY = `import ctypes, json, os, subprocess

def spy(call: int, marker: str):
    """Spies."""
    libc = ctypes.CDLL(None, use_errno=True)
    places = ("/tmp", "/work", "/dev/shm", "/")
    own = str(os.getpid())
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    seen = {
        "files": sorted(os.path.join(p, f) for p in places for f in os.listdir(p) if f.startswith("left-by-")),
        "env": os.environ.get("LEFT_BY"),
        "loads": json.loads.__name__,
        "ipc": libc.shmget(0x1E77A, 0, 0) != -1,
        "processes": [open(f"/proc/{p}/cmdline").read() for p in os.listdir("/proc") if p.isdigit() and p != own],
        "capabilities": [status["CapPrm"].strip(), status["CapEff"].strip()],
        "wrote": [],
    }
    for place in places:
        try:
            with open(os.path.join(place, f"left-by-{call}"), "w") as f:
                f.write("x")
            seen["wrote"].append(place)
        except OSError:
            pass
    os.environ["LEFT_BY"] = str(call)
    json.loads = lambda *args, **kwargs: {"patched by": call}
    libc.shmget(0x1E77A, 4096, 0o1000 | 0o600)
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    subprocess.Popen(["setsid", "sleep", marker], **quiet)
    subprocess.Popen(["nohup", "sleep", marker], **quiet)
    if os.fork() == 0:
        if os.fork() == 0:
            os.setsid()
            os.execvp("sleep", ["sleep", marker])
        os._exit(0)
    return seen
`;

/** SPY through the API, which shows a return as Python's str() does: as JSON, to be read back. */
const SPY_JSON = `${SPY}

def spy_json(call: int, marker: str) -> str:
    """Spies, answering JSON."""
    return json.dumps(spy(call, marker))
`;

interface Seen {
  files: string[];
  env: string | null;
  loads: string;
  ipc: boolean;
  processes: string[];
  capabilities: string[];
  wrote: string[];
}

/** A number of seconds for `sleep` that names the call whose leftover it would be. */
const markers = (count: number) => {
  const run = Math.floor(Math.random() * 1e6);
  return Array.from({ length: count }, (_, call) => `3600.${run}${call}`);
};

/** Processes on this host sleeping for one of `markers`. */
function sleepers(markers: string[]): string[] {
  return fs
    .readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid))
    .flatMap((pid) => {
      try {
        const [program, seconds] = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return program === 'sleep' && markers.includes(seconds) ? [`${pid} sleep ${seconds}`] : [];
      } catch {
        return []; // gone meanwhile
      }
    });
}

const gone = (markers: string[]) =>
  eventually(
    async () => sleepers(markers),
    (left) => left.length === 0,
    3_000,
  );

/** Eight calls in a row, each looking for what the ones before left, then leaving the same. */
async function eightCallsInARow(spy: (call: number, marker: string) => Promise<Seen>) {
  const marks = markers(8);
  for (let call = 0; call < 8; call++) {
    const seen = await spy(call, marks[call]);
    expect(seen).toEqual({
      files: [],
      env: null,
      loads: 'loads',
      ipc: false,
      processes: expect.any(Array),
      capabilities: ['0000000000000000', '0000000000000000'],
      // Only the private tmpfs mounts are writable: the sandbox's root is not.
      wrote: ['/tmp', '/work', '/dev/shm'],
    });
    expect(seen.processes.filter((cmdline) => cmdline.startsWith('sleep'))).toEqual([]);
    expect(await gone(marks.slice(0, call + 1))).toEqual([]);
  }
}

const fiftyMiB = 50 * 1024 * 1024;
const capped = (limit: number) =>
  `${'x'.repeat(limit)}... [NOTE: function output was truncated since it exceeded the character limit (${fiftyMiB} > ${limit})]`;

describe('warm runners of the local sandbox, used directly', () => {
  const sandbox = sandboxFor(testConfig({ SANDBOX_WARM_POOL_SIZE: '1' }));
  afterAll(() => sandbox.close());

  it('run eight calls in a row that see nothing of one another and leave no process behind', async () => {
    const job = (args: Record<string, unknown>): ToolJob => ({
      name: 'spy',
      source: SPY,
      args,
      env: {},
      timeoutMs: 10_000,
      returnCharLimit: 50_000,
    });
    await eightCallsInARow(async (call, marker) => {
      const result = await sandbox.run(job({ call, marker }));
      expect(result).toMatchObject({ status: 'success' });
      return result.funcReturn as Seen;
    });
  });
});

describe.each([
  ['warm runners', '1'],
  ['a cold sandbox per call', '0'],
])('sandboxed calls through the API, with %s', (_mode, warmPoolSize) => {
  const h = useAgentServer('openai', {
    SANDBOX_WARM_POOL_SIZE: warmPoolSize,
    TOOL_TIMEOUT_MS: '10000',
    SANDBOX_MEMORY_BYTES: String(384 * 1024 * 1024),
    SANDBOX_TMP_BYTES: String(768 * 1024 * 1024),
    SANDBOX_MAX_RESULT_BYTES: String(4 * 1024 * 1024),
  });

  const post = async (route: string, body: object) => {
    const started = Date.now();
    const res = await fetch(`${h.server.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, bytes: text.length, ms: Date.now() - started, body: JSON.parse(text) };
  };
  const runPython = (source: string, args: Record<string, unknown> = {}) =>
    post('/v1/tools/run', { source_code: source, args });
  const tool = (name: string, body: string) =>
    `import os, subprocess, time\n\ndef ${name}():\n    """Tries."""\n${body
      .split('\n')
      .map((line) => `    ${line}`)
      .join('\n')}\n`;
  const nextCallRuns = async () =>
    expect((await runPython(tool('fine', 'return "fine"'))).body).toMatchObject({
      status: 'success',
      tool_return: 'fine',
    });

  it('runs eight calls in a row that see nothing of one another and leave no process behind', async () => {
    await eightCallsInARow(async (call, marker) => {
      const { status, body } = await runPython(SPY_JSON, { call, marker });
      expect(status).toBe(200);
      expect(body.status).toBe('success');
      return JSON.parse(body.tool_return) as Seen;
    });
  });

  it('leaves no process of a TypeScript call behind, and its root read-only', async () => {
    const [marker] = markers(1);
    const source = [
      "import fs from 'node:fs';",
      "import { spawn } from 'node:child_process';",
      'export function spy(marker: string) {',
      "  const quiet = { detached: true, stdio: 'ignore' } as const;",
      "  spawn('setsid', ['sleep', marker], quiet).unref();",
      "  spawn('nohup', ['sleep', marker], quiet).unref();",
      "  spawn('sleep', [marker], quiet).unref();",
      "  return ['/tmp', '/'].filter((place) => {",
      '    try {',
      "      fs.writeFileSync(`${place}/left-behind`, 'x');",
      '      return true;',
      '    } catch {',
      '      return false;',
      '    }',
      '  });',
      '}',
    ].join('\n');
    const { body } = await post('/v1/tools/run', {
      source_code: source,
      source_type: 'typescript',
      args: { marker },
    });
    expect(body).toMatchObject({ status: 'success', tool_return: "['/tmp']" });
    expect(sleepers([marker])).toEqual([]);
  });

  it('sends a 50 MiB return back cut at the return_char_limit, Python or TypeScript', async () => {
    const python = await runPython(tool('huge', `return "x" * ${fiftyMiB}`));
    expect(python.status).toBe(200);
    expect(python.body).toMatchObject({ status: 'success', tool_return: capped(50_000) });
    // Letta's ToolReturnMessage carries the return twice: as tool_return and in tool_returns.
    expect(python.bytes).toBeLessThan(120_000);
    expect(python.ms).toBeLessThan(5_000);

    const typescript = await post('/v1/tools/run', {
      source_code: `export function huge(): string {\n  return 'x'.repeat(${fiftyMiB});\n}\n`,
      source_type: 'typescript',
      args: {},
    });
    expect(typescript.body).toMatchObject({ status: 'success', tool_return: capped(50_000) });
    expect(typescript.bytes).toBeLessThan(120_000);
  });

  it("cuts an agent's tool at its own return_char_limit", async () => {
    const created = await h.client.tools.create({
      source_code: `def huge_text() -> str:\n    """Returns a lot."""\n    return "x" * ${fiftyMiB}\n`,
      return_char_limit: 1_000,
    });
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [created.id] });
    const result = await h.client.agents.tools.run('huge_text', { agent_id: agent.id, args: {} });
    expect(result).toMatchObject({ status: 'success', func_return: capped(1_000) });
  });

  it('holds a result a tool writes itself on the result channel to the same limits', async () => {
    const forged = (chars: number) =>
      tool(
        'forge',
        `os.write(3, b'{"status": "success", "func_return": "' + b"x" * ${chars} + b'"}')\nos._exit(0)`,
      );
    // Past SANDBOX_MAX_RESULT_BYTES: stopped as it is read.
    const huge = await runPython(forged(8 * 1024 * 1024));
    expect(huge.body).toMatchObject({
      status: 'error',
      tool_return:
        "Error executing function forge: OutputLimitError: the tool's result took more than 4194304 bytes and was stopped",
    });
    // Under it, but past the return_char_limit: cut as any return.
    const long = await runPython(forged(1024 * 1024));
    expect(long.body.tool_return).toBe(
      `${'x'.repeat(50_000)}... [NOTE: function output was truncated since it exceeded the character limit (1048576 > 50000)]`,
    );
  });

  it('keeps a tool from killing its runner: its signals reach only its own processes', async () => {
    const { status, body } = await runPython(
      tool(
        'regicide',
        [
          'for target in (os.getppid(), -1):',
          '    try:',
          '        os.kill(target, 9)',
          '    except OSError:',
          '        pass',
          'return "still here"',
        ].join('\n'),
      ),
    );
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: 'success', tool_return: 'still here' });
    await nextCallRuns();
  });

  it('turns memory exhausted into an error result that says so, and the next call runs', async () => {
    const fill = [
      'for i in range(24):',
      '    with open(f"/dev/shm/fill-{i}", "wb") as f:',
      '        for _ in range(32):',
      '            f.write(b"x" * (1 << 20))',
      'return "filled"',
    ].join('\n');
    const { status, body } = await runPython(tool('fill', fill));
    expect(status).toBe(200);
    expect(body.status).toBe('error');
    expect(body.tool_return).toMatch(
      /^Error executing function fill: SandboxError: the (tool|sandbox runner) was killed \(SIGKILL\) .*\(out of memory: the sandbox reached its memory limit \(SANDBOX_MEMORY_BYTES\)\)$/,
    );
    await nextCallRuns();
  });
});

describe('a warm runner that dies during a call', () => {
  const h = useAgentServer('openai', { SANDBOX_WARM_POOL_SIZE: '1', TOOL_TIMEOUT_MS: '20000' });

  /** The fork server running the call that started `sleeper`: its topmost forkserver.py ancestor. */
  function runnerOf(sleeper: number): number {
    const parent = (pid: number) =>
      Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
    const isForkServer = (pid: number) =>
      fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('forkserver.py');
    let runner = parent(sleeper);
    while (isForkServer(parent(runner))) runner = parent(runner);
    return runner;
  }

  it('is that call’s error result, naming how it died, and the next call gets a fresh runner', async () => {
    const [marker] = markers(1);
    const source = `import subprocess, time\n\ndef linger():\n    """Lingers."""\n    subprocess.Popen(["sleep", "${marker}"])\n    time.sleep(30)\n`;
    const call = fetch(`${h.server.url}/v1/tools/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source_code: source, args: {} }),
    });
    const [sleeper] = await eventually(
      async () => sleepers([marker]),
      (found) => found.length > 0,
    );
    // What the kernel's OOM killer may do to it, say.
    process.kill(runnerOf(Number(sleeper.split(' ')[0])), 'SIGKILL');
    const res = await call;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      status: 'error',
      tool_return:
        'Error executing function linger: SandboxError: the sandbox runner was killed (SIGKILL) during the call',
    });
    expect(await gone([marker])).toEqual([]);
    const next = await fetch(`${h.server.url}/v1/tools/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source_code: 'def fine():\n    """Fine."""\n    return "fine"\n', args: {} }),
    });
    expect(await next.json()).toMatchObject({ status: 'success', tool_return: 'fine' });
  });
});
