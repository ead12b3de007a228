/**
 * The fake of Modal's API (helpers/modal-server.ts) against the real, unmodified `modal` SDK: what a
 * Modal backend does (an app, an image with requirements, a sandbox, execs with stdin, stdout, stderr,
 * exit codes and timeouts, terminate) goes through the SDK's own gRPC calls, and the fake records it.
 */
import fs from 'node:fs';
import { Status } from 'nice-grpc';
import type { App, Image, ModalClient, Sandbox } from 'modal';
import { startModalServer, type ModalServer } from './helpers/modal-server';

let server: ModalServer;
let sdk: typeof import('modal');
let modal: ModalClient;
const savedEnv = { ...process.env };

/** A client of the fake: the SDK reads MODAL_* when a client is constructed. */
function client(params: ConstructorParameters<typeof ModalClient>[0] = {}): ModalClient {
  return new sdk.ModalClient({ logLevel: 'error', ...params });
}

beforeAll(async () => {
  server = await startModalServer();
  for (const name of Object.keys(process.env)) if (name.startsWith('MODAL_')) delete process.env[name];
  Object.assign(process.env, server.env);
  // Loaded only now: the SDK reads its config file (MODAL_CONFIG_PATH) once, when it is loaded.
  sdk = await import('modal');
  modal = client();
});

afterAll(async () => {
  modal?.close();
  await server?.close();
  process.env = savedEnv;
});

const pythonImage = () =>
  modal.images.fromRegistry('python:3.12-slim').dockerfileCommands(['RUN python -m pip install x']);

async function lettaApp(): Promise<App> {
  return modal.apps.fromName('letta-tools', { createIfMissing: true });
}

/** Runs python code in `sandbox`, returns what it wrote and its exit code. */
async function runPython(
  sandbox: Sandbox,
  code: string,
  options: { stdin?: string; env?: Record<string, string>; timeoutMs?: number } = {},
) {
  const python = await sandbox.exec(['python3', '-c', code], {
    stdout: 'pipe',
    stderr: 'pipe',
    env: options.env,
    timeoutMs: options.timeoutMs,
  });
  if (options.stdin !== undefined) await python.stdin.writeText(options.stdin);
  await python.stdin.close();
  const [stdout, stderr] = await Promise.all([python.stdout.readText(), python.stderr.readText()]);
  return { stdout, stderr, exitCode: await python.wait() };
}

describe('the fake Modal API, driven by the real SDK', () => {
  let app: App;
  let image: Image;

  beforeAll(async () => {
    app = await lettaApp();
    image = pythonImage();
  });

  test('an app is created once, then found by name', async () => {
    expect(app.appId).toMatch(/^ap-/);
    expect((await lettaApp()).appId).toBe(app.appId);
    expect(server.apps).toEqual([{ appId: app.appId, name: 'letta-tools', environmentName: '' }]);
    await expect(modal.apps.fromName('missing')).rejects.toThrow("App 'missing' not found");
  });

  test('a sandbox is created from an image with requirements, and its parameters recorded', async () => {
    const sandbox = await modal.sandboxes.create(app, image, {
      timeoutMs: 600_000,
      idleTimeoutMs: 60_000,
      env: { SANDBOX_VAR: 'from-create' },
    });
    try {
      expect(image.imageId).toMatch(/^im-/);
      const record = server.sandboxes.find((s) => s.sandboxId === sandbox.sandboxId);
      expect(record).toMatchObject({
        appId: app.appId,
        imageId: image.imageId,
        api: 'v2',
        timeoutSecs: 600,
        idleTimeoutSecs: 60,
        env: { SANDBOX_VAR: 'from-create' },
        state: 'running',
      });
      expect(server.images.find((i) => i.imageId === image.imageId)).toMatchObject({
        registryTag: 'python:3.12-slim',
        commands: ['RUN python -m pip install x'],
        builds: 1,
        status: 'built',
      });
    } finally {
      await sandbox.terminate();
    }
  });

  describe('exec', () => {
    let sandbox: Sandbox;

    beforeAll(async () => {
      sandbox = await modal.sandboxes.create(app, image, { env: { SANDBOX_VAR: 'sandbox' } });
    });
    afterAll(() => sandbox?.terminate());

    test('stdout, stderr and the exit code', async () => {
      const result = await runPython(
        sandbox,
        'import sys; print("to stdout"); print("to stderr", file=sys.stderr); sys.exit(3)',
      );
      expect(result).toEqual({ stdout: 'to stdout\n', stderr: 'to stderr\n', exitCode: 3 });
    });

    test('stdin reaches the process', async () => {
      const result = await runPython(sandbox, 'import sys; print(sys.stdin.read().upper())', {
        stdin: 'hello, sandbox',
      });
      expect(result).toMatchObject({ stdout: 'HELLO, SANDBOX\n', exitCode: 0 });
      expect(server.execs.at(-1)?.stdin).toBe('hello, sandbox');
    });

    test("the environment is the exec's and the sandbox's, nothing of this host's", async () => {
      process.env.HOST_ONLY_SECRET = 'leaked';
      try {
        const code = 'import json, os; print(json.dumps(dict(os.environ)))';
        const result = await runPython(sandbox, code, { env: { EXEC_VAR: 'exec' } });
        const env = JSON.parse(result.stdout) as Record<string, string>;
        expect(env).toMatchObject({ EXEC_VAR: 'exec', SANDBOX_VAR: 'sandbox' });
        expect(env).not.toHaveProperty('HOST_ONLY_SECRET');
        expect(env).not.toHaveProperty('MODAL_TOKEN_SECRET');
        expect(server.execs.at(-1)).toMatchObject({
          sandboxId: sandbox.sandboxId,
          argv: ['python3', '-c', code],
          env: { EXEC_VAR: 'exec' },
        });
      } finally {
        delete process.env.HOST_ONLY_SECRET;
      }
    });

    test('a timed-out exec is killed: wait() gives 137, as from Modal', async () => {
      const started = Date.now();
      const sleeper = await sandbox.exec(['python3', '-c', 'import time; time.sleep(30)'], {
        timeoutMs: 1000,
      });
      // Its output is not read here: the SDK bounds reads by the same deadline, on its side, so a read
      // in progress at the timeout may end with "Deadline exceeded" instead (with Modal too).
      expect(await sleeper.wait()).toBe(137);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(server.execs.at(-1)).toMatchObject({ timeoutSecs: 1, timedOut: true, exit: { signal: 9 } });
    });

    test('a handle found again by id asks for the task and its router, and runs execs too', async () => {
      const again = await modal.sandboxes.fromId(sandbox.sandboxId);
      expect(await runPython(again, 'print("again")')).toMatchObject({ stdout: 'again\n', exitCode: 0 });
      expect(server.calls).toEqual(
        expect.arrayContaining(['SandboxGetTaskIdV2', 'SandboxGetCommandRouterAccess']),
      );
    });

    test('what the fake does not serve answers UNIMPLEMENTED', async () => {
      await expect(sandbox.tunnels()).rejects.toThrow(/UNIMPLEMENTED/);
    });

    test('a command that does not exist exits with 127', async () => {
      const missing = await sandbox.exec(['no-such-command-here']);
      expect(await missing.wait()).toBe(127);
      expect(await missing.stderr.readText()).toContain('no-such-command-here');
    });
  });

  test('terminate kills its processes and removes its folder; it then runs nothing more', async () => {
    const sandbox = await modal.sandboxes.create(app, image);
    const record = server.sandboxes.find((s) => s.sandboxId === sandbox.sandboxId)!;
    const sleeper = await sandbox.exec(['sleep', '60']);
    const exit = sleeper.wait();
    expect(await sandbox.poll()).toBeNull();

    await sandbox.terminate();

    expect(await exit).toBe(137);
    expect(record.state).toBe('terminated');
    expect(server.liveSandboxes()).not.toContainEqual(record);
    expect(fs.existsSync(record.dir)).toBe(false);
    expect(await sandbox.wait()).toBe(137);
    await expect(sandbox.exec(['true'])).rejects.toThrow(/NOT_FOUND/);
    // A handle that never ran anything asks for the task first, and hears that the sandbox finished.
    const again = await modal.sandboxes.fromId(sandbox.sandboxId);
    await expect(again.exec(['true'])).rejects.toThrow(/has already finished/);
  });

  test('a sandbox past its timeout is stopped: wait() gives 124', async () => {
    const sandbox = await modal.sandboxes.create(app, image, { timeoutMs: 1000 });
    expect(await sandbox.wait()).toBe(124);
    expect(server.sandboxes.find((s) => s.sandboxId === sandbox.sandboxId)?.state).toBe('timed out');
    await expect(sandbox.exec(['true'])).rejects.toThrow(/NOT_FOUND/);
  });

  test('expireSandbox ends a sandbox as its timeout would', async () => {
    const sandbox = await modal.sandboxes.create(app, image);
    server.expireSandbox(sandbox.sandboxId);
    expect(await sandbox.wait()).toBe(124);
  });

  test('one image definition is built once, however many sandboxes use it', async () => {
    const definition = () =>
      modal.images
        .fromRegistry('python:3.12-slim')
        .dockerfileCommands(['RUN python -m pip install reuse-me']);
    const first = await modal.sandboxes.create(app, definition());
    const second = await modal.sandboxes.create(app, definition());
    await Promise.all([first.terminate(), second.terminate()]);

    const images = server.images.filter((i) => i.commands.includes('RUN python -m pip install reuse-me'));
    expect(images).toHaveLength(1);
    expect(images[0]).toMatchObject({ builds: 1, requests: 2 });
    const created = server.sandboxes.filter((s) => [first.sandboxId, second.sandboxId].includes(s.sandboxId));
    expect(created.map((s) => s.imageId)).toEqual([images[0].imageId, images[0].imageId]);
  });

  test('a failed image build fails sandbox creation', async () => {
    server.failImageBuilds(/pip install does-not-exist/, 'ERROR: No matching distribution found');
    const broken = modal.images
      .fromRegistry('python:3.12-slim')
      .dockerfileCommands(['RUN python -m pip install does-not-exist']);
    await expect(modal.sandboxes.create(app, broken)).rejects.toThrow(/No matching distribution found/);
  });

  test('failures can be injected: a transient one is retried by the SDK, others fail the call', async () => {
    const attempts = () => server.calls.filter((method) => method === 'SandboxCreateV2').length;
    const attemptsBefore = attempts();
    server.failNext('SandboxCreate', Status.UNAVAILABLE);
    const retried = await modal.sandboxes.create(app, image);
    await retried.terminate();
    expect(attempts()).toBe(attemptsBefore + 2);

    server.failNext('SandboxCreate', Status.RESOURCE_EXHAUSTED);
    const before = server.sandboxes.length;
    await expect(modal.sandboxes.create(app, image)).rejects.toThrow(/RESOURCE_EXHAUSTED/);
    expect(server.sandboxes).toHaveLength(before);
    expect(() => server.failNext('NoSuchMethod')).toThrow('no method NoSuchMethod');
  });

  test('the older (V1) sandbox calls work too', async () => {
    process.env.MODAL_SANDBOX_V2 = '0';
    const v1 = client();
    try {
      const sandbox = await v1.sandboxes.create(await v1.apps.fromName('letta-tools'), pythonImage());
      const result = await runPython(sandbox, 'import sys; print(sys.stdin.read()[::-1])', { stdin: 'abc' });
      expect(result).toMatchObject({ stdout: 'cba\n', exitCode: 0 });
      await sandbox.terminate();
      expect(await sandbox.wait()).toBe(137);
      expect(server.sandboxes.at(-1)).toMatchObject({ sandboxId: sandbox.sandboxId, api: 'v1' });
      expect(server.calls).toEqual(
        expect.arrayContaining(['SandboxCreate', 'SandboxGetTaskId', 'SandboxTerminate']),
      );
    } finally {
      delete process.env.MODAL_SANDBOX_V2;
      v1.close();
    }
  });
});

test('wrong credentials are refused: the SDK call rejects', async () => {
  const intruder = client({ tokenId: server.tokenId, tokenSecret: 'not-the-secret' });
  try {
    await expect(intruder.apps.fromName('letta-tools', { createIfMissing: true })).rejects.toThrow(
      /UNAUTHENTICATED/,
    );
  } finally {
    intruder.close();
  }
  // Refused at the first call, the one for an auth token.
  expect(server.calls.at(-1)).toBe('AuthTokenGet');
});
