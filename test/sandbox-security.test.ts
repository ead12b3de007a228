import { useAgentServer } from './helpers/agent-server';

/**
 * Custom tools are untrusted code: each attack here is a tool that tries, and must fail with a clear
 * error while the server stays healthy.
 */
describe.each([
  ['warm runners', '2'],
  ['a cold sandbox per call', '0'],
])('the local sandbox against hostile tools, with %s', (_mode, warmPoolSize) => {
  const h = useAgentServer('openai', {
    SANDBOX_WARM_POOL_SIZE: warmPoolSize,
    TOOL_TIMEOUT_MS: '3000',
    SANDBOX_MEMORY_BYTES: String(256 * 1024 * 1024),
    SANDBOX_MAX_OUTPUT_BYTES: String(64 * 1024),
    SANDBOX_MAX_PROCESSES: '32',
    SANDBOX_FILE_SIZE_BYTES: String(1024 * 1024),
  });
  // The server runs in this process: a secret in its environment the tools must not see.
  process.env.SECRET_OF_THE_SERVER = 'hunter2';
  afterAll(() => delete process.env.SECRET_OF_THE_SERVER);

  const attack = async (body: string) => {
    const source = `import os, socket, time\n\ndef attack():\n    """Attacks."""\n${body
      .split('\n')
      .map((line) => `    ${line}`)
      .join('\n')}\n`;
    const started = Date.now();
    const res = await fetch(`${h.server.url}/v1/tools/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source_code: source, args: {} }),
    });
    const result = (await res.json()) as { status: string; tool_return: string; stdout: string[] };
    const health = await fetch(`${h.server.url}/v1/health/`);
    expect(health.status).toBe(200);
    return { ...result, ms: Date.now() - started };
  };

  it('cannot open a network connection', async () => {
    const port = new URL(h.server.url).port;
    for (const target of [`("127.0.0.1", ${port})`, '("203.0.113.80", 443)']) {
      const result = await attack(`return socket.create_connection(${target}, timeout=2)`);
      expect(result).toMatchObject({ status: 'error' });
      expect(result.tool_return).toMatch(
        /^Error executing function attack: (OSError|ConnectionRefusedError): /,
      );
    }
  });

  it("cannot read the server's environment, through /proc or otherwise", async () => {
    const own = await attack('return open("/proc/1/environ").read()');
    expect(JSON.stringify(own)).not.toContain('hunter2');
    const server = await attack(`return open("/proc/${process.pid}/environ").read()`);
    expect(server.tool_return).toMatch(/FileNotFoundError|PermissionError/);
    const env = await attack('return dict(os.environ)');
    expect(JSON.stringify(env.tool_return)).not.toMatch(/hunter2|DATABASE_URL|OPENAI_API_KEY/);
  });

  it('cannot read files outside its work directory', async () => {
    for (const file of ['/etc/passwd', `${process.cwd()}/package.json`, '/root/.bashrc']) {
      const result = await attack(`return open(${JSON.stringify(file)}).read()`);
      expect(result.tool_return).toMatch(/^Error executing function attack: FileNotFoundError: /);
    }
  });

  it('cannot write outside its work directory, nor fill its own past the file-size limit', async () => {
    const usr = await attack('open("/usr/escaped", "w")');
    expect(usr.tool_return).toMatch(/OSError: \[Errno 30\] Read-only file system/);
    const big = await attack('open("big", "w").write("x" * 4 * 1024 * 1024)');
    expect(big.tool_return).toMatch(/OSError: \[Errno 27\] File too large/);
    const own = await attack('open("notes.txt", "w").write("ok")\nreturn open("notes.txt").read()');
    expect(own).toMatchObject({ status: 'success', tool_return: 'ok' });
  });

  it('a fork bomb runs out of processes and is cleaned up', async () => {
    const result = await attack('while True:\n    os.fork()');
    expect(result.status).toBe('error');
    expect(result.tool_return).toMatch(/BlockingIOError: \[Errno 11\] Resource temporarily unavailable/);
    expect(result.ms).toBeLessThan(10_000);
  });

  it('cannot allocate far past the memory limit', async () => {
    const result = await attack('return len(bytearray(2 * 1024 ** 3))');
    expect(result.tool_return).toBe('Error executing function attack: MemoryError: ');
  });

  it('a loop that never ends is killed at the timeout', async () => {
    const result = await attack('while True:\n    pass');
    expect(result.tool_return).toBe(
      'Error executing function attack: TimeoutError: Executing tool attack timed out after 3.0 seconds.',
    );
    expect(result.ms).toBeLessThan(8_000);
  });

  it('printing gigabytes stops the tool at the output limit', async () => {
    const result = await attack('while True:\n    print("x" * 65536)');
    expect(result.tool_return).toBe(
      'Error executing function attack: OutputLimitError: the tool printed more than 65536 bytes and was stopped',
    );
    // What is kept of it: its head and tail (SANDBOX_OUTPUT_KEEP_BYTES, 64 KiB by default).
    expect(result.stdout[0]).toMatch(/^x{32768}\n\[\.\.\. \d+ bytes cut \.\.\.\]\n.*x{16384}/s);
    expect(result.stdout[0].length).toBeLessThan(64 * 1024 + 100);
    expect(result.ms).toBeLessThan(8_000);
  });
});
