import fs from 'node:fs';
import path from 'node:path';
import { Status } from 'nice-grpc';
import { useAgentServer } from './helpers/agent-server';
import { useModalServer } from './helpers/modal-server';
import { eventually } from './helpers/eventually';
import { silentLogger } from './helpers/env';
import { jsonRequest } from './helpers/http';
import { modalSandbox, type ModalSandboxOptions, type ModalToolSandbox } from '../src/sandbox/modal';
import { modalUnsupportedReason } from '../src/sandbox/modal-support';
import { SandboxUnavailableError, type ToolJob } from '../src/sandbox';

/**
 * The Modal backend through Modal's real SDK, against a local server that speaks Modal's gRPC API
 * (test/helpers/modal-server.ts). Where Node is too old for the SDK, the same calls must fall back.
 */
const modalSupported = modalUnsupportedReason() === null;

const OUTPUTS = { maxOutputBytes: 1 << 20, keepOutputBytes: 1 << 16, maxResultBytes: 1 << 20 };

const job = (source: string, name: string, extra: Partial<ToolJob> = {}): ToolJob => ({
  name,
  source,
  args: {},
  env: {},
  timeoutMs: 30_000,
  returnCharLimit: 10_000,
  ...extra,
});

const ECHO = `import os, sys

def echo(text: str):
    """Echoes."""
    print("out:", text)
    print("err:", text, file=sys.stderr)
    return {"text": text, "secret": os.environ.get("SECRET"), "cwd": os.path.basename(os.path.dirname(os.getcwd()))}
`;

describe('the Modal sandbox (real SDK, local Modal server)', () => {
  const sandboxes: ModalToolSandbox[] = [];
  // Declared before the server's: jest runs afterAll hooks in their order, and a sandbox closed after
  // its server would leave the SDK reconnecting to the port, which a later test's server may hold.
  afterAll(() => Promise.all(sandboxes.map((s) => s.close())));
  const h = useModalServer();

  const backend = (options: Partial<ModalSandboxOptions> = {}) => {
    const sandbox = modalSandbox({
      tokenId: h.modal.tokenId,
      tokenSecret: h.modal.tokenSecret,
      appName: 'letta-tools-test',
      pythonImage: 'python:3.12-slim',
      nodeImage: 'node:22-slim',
      reuse: true,
      idleMs: 60_000,
      lifetimeMs: 600_000,
      outputs: OUTPUTS,
      log: silentLogger(),
      ...options,
    });
    sandboxes.push(sandbox);
    return sandbox;
  };

  const lastSandboxEnds = () => {
    const last = h.modal.sandboxes.at(-1)!;
    return eventually(
      async () => last.state,
      (state) => state !== 'running',
    );
  };

  if (!modalSupported) {
    it('is unavailable on this Node, saying which Node it needs', async () => {
      const run = backend().run(job(ECHO, 'echo', { args: { text: 'hi' } }));
      await expect(run).rejects.toThrow(SandboxUnavailableError);
      await expect(run).rejects.toThrow(/Modal sandboxes need Node 22 or later; this server runs Node 20/);
      expect(h.modal.sandboxes).toHaveLength(0);
    });
    return;
  }

  it('runs a Python tool: its return, what it printed, its environment given to the exec alone', async () => {
    const result = await backend().run(job(ECHO, 'echo', { args: { text: 'hi' }, env: { SECRET: 's1' } }));
    expect(result).toMatchObject({
      status: 'success',
      funcReturn: { text: 'hi', secret: 's1', cwd: 'calls' },
      stdout: ['out: hi\n'],
      stderr: ['err: hi\n'],
    });
    const exec = h.modal.execs.at(-1)!;
    expect(exec.argv.slice(0, 2)).toEqual(['sh', '-c']);
    expect(exec.env).toEqual({ SECRET: 's1' });
    const sandbox = h.modal.sandboxes.find((s) => s.sandboxId === exec.sandboxId)!;
    expect(sandbox.env).toEqual({});
    expect(sandbox.workdir).toBe('/letta');
    // The call's folder went with it.
    expect(fs.readdirSync(path.join(sandbox.dir, 'letta', 'calls'))).toEqual([]);
  });

  it("reports the tool's own error as its result, with the traceback", async () => {
    const source = 'def boom():\n    """Fails."""\n    raise ValueError("no")\n';
    const result = await backend().run(job(source, 'boom'));
    expect(result.status).toBe('error');
    expect(result.funcReturn).toBe('Error executing function boom: ValueError: no');
    expect(result.stderr.join('\n')).toMatch(/Traceback/);
  });

  it('builds an image once per requirements set and keeps one sandbox per configuration', async () => {
    const sandbox = backend();
    const before = { images: h.modal.images.length, sandboxes: h.modal.sandboxes.length };
    const withRequirements = (env: Record<string, string>) =>
      job(ECHO, 'echo', { args: { text: 'x' }, env, pipRequirements: [{ name: 'six', version: '1.16.0' }] });
    for (const env of [{ A: '1' }, { A: '1' }, { A: '2' }])
      expect((await sandbox.run(withRequirements(env))).status).toBe('success');
    const images = h.modal.images.slice(before.images);
    expect(images).toHaveLength(1);
    expect(images[0]).toMatchObject({
      registryTag: 'python:3.12-slim',
      commands: ["RUN python3 -m pip install --no-cache-dir 'six==1.16.0'"],
      builds: 1,
    });
    // Same image and environment: one sandbox; another environment (secrets): another sandbox.
    expect(h.modal.sandboxes.slice(before.sandboxes)).toHaveLength(2);
  });

  it('gives calls at once sandboxes of their own, and reuses them for the calls after', async () => {
    const sandbox = backend();
    const before = h.modal.sandboxes.length;
    const call = () => sandbox.run(job(ECHO, 'echo', { args: { text: 'x' }, env: { AT_ONCE: '1' } }));
    const results = await Promise.all([call(), call()]);
    expect(results.map((r) => r.status)).toEqual(['success', 'success']);
    expect(h.modal.sandboxes.length - before).toBe(2);
    await Promise.all([call(), call()]);
    expect(h.modal.sandboxes.length - before).toBe(2);
  });

  it('terminates a kept sandbox once it has been idle, and each one after its call without reuse', async () => {
    const idle = backend({ idleMs: 300 });
    await idle.run(job(ECHO, 'echo', { args: { text: 'x' }, env: { IDLE: '1' } }));
    const kept = h.modal.sandboxes.at(-1)!;
    expect(kept.state).toBe('running');
    expect(
      await eventually(
        async () => kept.state,
        (state) => state === 'terminated',
      ),
    ).toBe('terminated');

    const fresh = backend({ reuse: false });
    await fresh.run(job(ECHO, 'echo', { args: { text: 'x' }, env: { FRESH: '1' } }));
    expect(await lastSandboxEnds()).toBe('terminated');
  });

  it('stops a tool at its timeout and terminates its sandbox', async () => {
    const source = 'import time\ndef slow():\n    """Sleeps."""\n    time.sleep(30)\n';
    const result = await backend().run(job(source, 'slow', { timeoutMs: 1_000, env: { SLOW: '1' } }));
    expect(result.status).toBe('error');
    expect(String(result.funcReturn)).toMatch(/timed out/i);
    expect(await lastSandboxEnds()).toBe('terminated');
  });

  it('runs a TypeScript tool on the Node image, its npm requirements installed in the image', async () => {
    const source = 'export function add(a: number, b: number): number {\n  return a + b;\n}\n';
    const result = await backend().run(
      job(source, 'add', {
        language: 'typescript',
        args: { a: 2, b: 3 },
        npmRequirements: [{ name: 'left-pad', version: '1.3.0' }],
      }),
    );
    expect(result).toMatchObject({ status: 'success', funcReturn: 5 });
    expect(h.modal.images.at(-1)).toMatchObject({
      registryTag: 'node:22-slim',
      commands: ["RUN mkdir -p /letta && cd /letta && npm install --no-save 'left-pad@1.3.0'"],
    });
  });

  it('is unavailable (not a tool error) when Modal refuses the credentials', async () => {
    const run = backend({ tokenSecret: 'wrong' }).run(job(ECHO, 'echo', { args: { text: 'x' } }));
    await expect(run).rejects.toThrow(SandboxUnavailableError);
  });
});

describe('a tool that asks for Modal, in an agent turn', () => {
  const m = useModalServer();
  const env: Record<string, string> = {};
  beforeAll(() => {
    Object.assign(env, {
      MODAL_TOKEN_ID: m.modal.tokenId,
      MODAL_TOKEN_SECRET: m.modal.tokenSecret,
      MODAL_SANDBOX_IDLE_MS: '1000',
    });
  });
  // A block of its own: its server stops, closing its Modal sandboxes, before the Modal server does.
  describe('on an agent server', () => {
    const h = useAgentServer('openai', env);

    const WHERE = `import os

def where(tag: str):
    """Says where it runs.

    Args:
        tag (str): A tag it echoes.
    """
    return {"tag": tag, "modal_var": os.environ.get("MODAL_VAR"), "local_var": os.environ.get("LOCAL_VAR")}
`;

    /** An agent with `where` (asking for Modal) and one turn that calls it; the tool's return message. */
    const callWhere = async (metadata: Record<string, unknown> | undefined) => {
      const tool = await h.client.tools.upsert({
        source_code: WHERE,
        ...(metadata && { metadata_: metadata }),
      });
      const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
      h.stub.enqueue({ toolCalls: [{ name: 'where', arguments: { tag: 'x' } }] }, { text: 'done' });
      const response = await h.client.agents.messages.create(agent.id, {
        messages: [{ role: 'user', content: 'Where do you run?' }],
      });
      const toolReturn = response.messages.find((m) => m.message_type === 'tool_return_message');
      return toolReturn as unknown as { status: string; tool_return: string; stderr: string[] | null };
    };

    /** Letta's sandbox-config API (the TS client has none): a config of `type` with one variable. */
    const configWithVariable = async (body: unknown, key: string, value: string) => {
      const config = (await jsonRequest(h.server.url, 'POST', '/v1/sandbox-config', body)).json as {
        id: string;
      };
      await jsonRequest(h.server.url, 'POST', `/v1/sandbox-config/${config.id}/environment-variable`, {
        key,
        value,
      });
      return config;
    };

    beforeAll(async () => {
      await configWithVariable({ config: { use_venv: false } }, 'LOCAL_VAR', 'from-local');
      if (!modalSupported) return;
      const modal = await configWithVariable(
        { config: { timeout: 30, language: 'python' } },
        'MODAL_VAR',
        'from-modal',
      );
      expect(modal).toMatchObject({ type: 'modal' });
    });

    it('a tool that does not ask for Modal runs in the local sandbox', async () => {
      const execs = m.modal.execs.length;
      const result = await callWhere(undefined);
      expect(JSON.parse(result.tool_return)).toEqual({ tag: 'x', modal_var: null, local_var: 'from-local' });
      expect(m.modal.execs).toHaveLength(execs);
    });

    if (modalSupported) {
      it("runs on Modal with the modal sandbox config's variables, through the real SDK", async () => {
        const result = await callWhere({ sandbox: 'modal' });
        expect(result.status).toBe('success');
        expect(JSON.parse(result.tool_return)).toEqual({
          tag: 'x',
          modal_var: 'from-modal',
          local_var: null,
        });
        expect(m.modal.execs.at(-1)!.env).toMatchObject({ MODAL_VAR: 'from-modal' });
      });

      it('falls back to the local sandbox when Modal cannot start one, and says so', async () => {
        m.modal.failNext('SandboxCreate', Status.RESOURCE_EXHAUSTED);
        const result = await callWhere({ sandbox: 'modal' });
        expect(result.status).toBe('success');
        expect(JSON.parse(result.tool_return)).toEqual({
          tag: 'x',
          modal_var: null,
          local_var: 'from-local',
        });
        expect(result.stderr?.[0]).toMatch(
          /^Modal sandbox unavailable \(Modal sandbox: .+\): the tool ran in the local sandbox instead$/,
        );
      });
    } else {
      it('falls back to the local sandbox on this Node, and says why', async () => {
        const result = await callWhere({ sandbox: 'modal' });
        expect(result.status).toBe('success');
        expect(JSON.parse(result.tool_return)).toEqual({
          tag: 'x',
          modal_var: null,
          local_var: 'from-local',
        });
        expect(result.stderr?.[0]).toMatch(
          /^Modal sandbox unavailable \(Modal sandbox: Modal sandboxes need Node 22 or later; this server runs Node 20.+\): the tool ran in the local sandbox instead$/,
        );
        expect(m.modal.sandboxes).toHaveLength(0);
      });
    }
  });
});
