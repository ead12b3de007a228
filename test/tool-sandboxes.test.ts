import { runInFirstAvailable, toolSandboxes, type SandboxChoice } from '../src/sandbox/tool-sandboxes';
import {
  SandboxUnavailableError,
  type Sandbox,
  type ToolJob,
  type ToolRunResult,
} from '../src/sandbox/types';

/**
 * The order a call tries its places in, and what makes it go on to the next. The places themselves
 * are tested for real elsewhere (modal-sandbox, e2b-sandbox, sandbox-*); here each is one that answers
 * as told, so that every branch of the order is seen.
 */
const answering = (result: Partial<ToolRunResult>): Sandbox => ({
  run: async () => ({ status: 'success', funcReturn: null, stdout: [], stderr: [], ...result }),
});
const unavailable = (why: string): Sandbox => ({
  run: () => Promise.reject(new SandboxUnavailableError(why)),
});

const job = (configType: string): ToolJob => ({
  name: 'f',
  source: '',
  args: {},
  env: { CONFIG: configType },
  timeoutMs: 1000,
  returnCharLimit: 100,
});
const jobFor = async (choice: SandboxChoice) => job(choice.configType);

describe('where a custom tool runs', () => {
  const local = answering({ funcReturn: 'local' });
  const backends = (modal: Sandbox, e2b: Sandbox | null) =>
    toolSandboxes({
      operators: { name: 'local', configType: 'local', sandbox: local },
      modal: { run: modal.run, close: async () => undefined },
      e2b,
      local: null,
      everyToolOnModal: false,
    });

  it("runs a tool that does not ask for Modal in the operator's sandbox alone", () => {
    const choices = backends(answering({}), answering({})).choicesFor({ metadata: { sandbox: 'e2b' } });
    expect(choices.map((c) => c.name)).toEqual(['local']);
  });

  it('tries Modal, then E2B, then the local sandbox, each with its own config, and says where it ran', async () => {
    const choices = backends(unavailable('no credit'), unavailable('key refused')).choicesFor({
      metadata: { sandbox: 'modal' },
    });
    expect(choices.map((c) => [c.name, c.configType])).toEqual([
      ['Modal', 'modal'],
      ['E2B', 'e2b'],
      ['local', 'local'],
    ]);
    const { job: ran, run, ranOn } = await runInFirstAvailable(choices, jobFor);
    expect(ranOn).toBe('local');
    expect(ran.env).toEqual({ CONFIG: 'local' });
    expect(run.funcReturn).toBe('local');
    expect(run.stderr[0]).toBe(
      'Modal sandbox unavailable (no credit); E2B sandbox unavailable (key refused): the tool ran in the local sandbox instead',
    );
  });

  it("never runs a tool again elsewhere for its own error, and fails when the last place can't run", async () => {
    const failing = answering({ status: 'error', funcReturn: 'Error executing function f: ValueError: no' });
    const choices = backends(failing, null).choicesFor({ metadata: { sandbox: 'modal' } });
    expect(choices.map((c) => c.name)).toEqual(['Modal', 'local']);
    const { run, ranOn } = await runInFirstAvailable(choices, jobFor);
    expect({ ranOn, status: run.status, stderr: run.stderr }).toEqual({
      ranOn: 'Modal',
      status: 'error',
      stderr: [],
    });

    const none = [
      { name: 'Modal', configType: 'modal', sandbox: unavailable('down') },
      { name: 'local', configType: 'local', sandbox: unavailable('no bubblewrap') },
    ] satisfies SandboxChoice[];
    await expect(runInFirstAvailable(none, jobFor)).rejects.toThrow('no bubblewrap');
  });

  it('does not fall back on a failure that is not the sandbox being unavailable', async () => {
    const broken: Sandbox = { run: () => Promise.reject(new Error('database gone')) };
    const choices = backends(broken, null).choicesFor({ metadata: { sandbox: 'modal' } });
    await expect(runInFirstAvailable(choices, jobFor)).rejects.toThrow('database gone');
  });

  it('sends every tool to Modal with SANDBOX_TYPE=modal, and says when Modal is not configured', async () => {
    const sandboxes = toolSandboxes({
      operators: { name: 'local', configType: 'local', sandbox: local },
      modal: null,
      e2b: null,
      local: null,
      everyToolOnModal: true,
    });
    const { ranOn, run } = await runInFirstAvailable(sandboxes.choicesFor({}), jobFor);
    expect(ranOn).toBe('local');
    expect(run.stderr[0]).toMatch(
      /^Modal sandbox unavailable \(Modal is not configured .*\): the tool ran in the local/,
    );
  });
});
