/**
 * The E2B sandbox: each tool call runs runner.py in an E2B cloud sandbox (a Firecracker VM), chosen
 * only by SANDBOX_TYPE=e2b. The job goes in as a file, the result comes back framed on stdout (E2B
 * commands have no other channel) under a marker that is random per call.
 *
 * A sandbox is found again by `metadata.config_hash`: the template, the pip requirements and the
 * tool's environment. Reuse therefore never mixes calls that see different secrets, and a sandbox's
 * requirements are fixed by its hash, so they are installed once per sandbox.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  CommandExitError,
  Sandbox as E2B,
  SandboxNotFoundError,
  type CommandResult,
  type SandboxConnectOpts,
  type SandboxInfo,
  type SandboxListOpts,
  type SandboxOpts,
} from 'e2b';
import { projectRoot } from '../paths';
import { newResultMarker } from './result-frame';
import {
  capturedOutput,
  framedResult,
  framedRunnerJob,
  pipSpecs,
  reusableEnv,
  shellQuote,
  stopWhen,
  unavailable as unavailableIn,
} from './remote-call';
import { failure, stoppedResult, type OutputLimits } from './results';
import { type Sandbox, type ToolJob, type ToolRunResult } from './types';

/** The part of an E2B sandbox this backend uses; the SDK's instances are one. */
export interface E2BInstance extends Pick<E2B, 'sandboxId' | 'kill'> {
  files: { write(files: { path: string; data: string }[]): Promise<unknown> };
  commands: {
    run(cmd: string, opts: { envs: Record<string, string>; timeoutMs: number }): Promise<CommandResult>;
  };
}

/** The part of the SDK this backend uses: the `Sandbox` class of `e2b` is one; tests pass a fake. */
export interface E2BSdk {
  create(template: string, opts: SandboxOpts): Promise<E2BInstance>;
  connect(sandboxId: string, opts: SandboxConnectOpts): Promise<E2BInstance>;
  list(opts: SandboxListOpts): { nextItems(): Promise<Pick<SandboxInfo, 'sandboxId'>[]> };
}

export interface E2BSandboxOptions {
  apiKey: string;
  template: string;
  /** How long a sandbox lives after it was last used (E2B kills it then). */
  sandboxTimeoutMs: number;
  /** Keep sandboxes for later calls; false kills each one after its call, as Letta does. */
  reuse: boolean;
  /** Of these, E2B applies how much of stdout and stderr is kept (the tool is not stopped for output). */
  outputs: OutputLimits;
}

const RUNNER = readFileSync(path.join(projectRoot, 'src', 'sandbox', 'python', 'runner.py'), 'utf8');

/**
 * E2B's own command deadline, past the tool's: our timer decides the timeout (E2B's TimeoutError
 * also means a dead sandbox), E2B's only ends a command whose caller went away.
 */
const COMMAND_GRACE_MS = 10_000;

export function e2bSandbox(options: E2BSandboxOptions, sdk: E2BSdk = E2B): Sandbox {
  return new E2BToolSandbox(options, sdk);
}

class E2BToolSandbox implements Sandbox {
  /** pip installs by sandbox id, so that concurrent calls share one. */
  private readonly installs = new Map<string, Promise<CommandResult>>();

  constructor(
    private readonly options: E2BSandboxOptions,
    private readonly sdk: E2BSdk,
  ) {}

  async run(job: ToolJob, signal?: AbortSignal): Promise<ToolRunResult> {
    const sandbox = await this.acquire(job).catch((error: unknown) => {
      throw unavailable(error);
    });
    const stop = stopWhen(job.timeoutMs, signal);
    const work = this.installAndRun(sandbox, job);
    work.catch(() => undefined); // once stopped, the killed command's failure is expected
    try {
      const outcome = await Promise.race([work, stop.stopped]);
      if (typeof outcome === 'string') {
        // A tool that overran or was cancelled may still run: its sandbox is not reused.
        await this.kill(sandbox);
        return { ...stoppedResult(job, outcome, this.options.outputs), stdout: [], stderr: [] };
      }
      if (!this.options.reuse) await this.kill(sandbox);
      return outcome;
    } catch (error) {
      await this.kill(sandbox);
      throw error;
    } finally {
      stop.clear();
    }
  }

  private async acquire(job: ToolJob): Promise<E2BInstance> {
    const connection = { apiKey: this.options.apiKey, timeoutMs: this.lifetime(job) };
    const metadata = { config_hash: configHash(this.options.template, job) };
    if (this.options.reuse) {
      const query = { metadata, state: ['running' as const] };
      const [running] = await this.sdk.list({ apiKey: this.options.apiKey, query, limit: 1 }).nextItems();
      // Connecting also pushes the sandbox's end of life out by `timeoutMs` from now.
      if (running) {
        const found = await this.sdk.connect(running.sandboxId, connection).catch(gone);
        if (found) return found;
      }
    }
    return this.sdk.create(this.options.template, { ...connection, metadata });
  }

  /** The sandbox must outlive the call it is taken for, whatever E2B_SANDBOX_TIMEOUT_MS says. */
  private lifetime(job: ToolJob): number {
    return Math.max(this.options.sandboxTimeoutMs, job.timeoutMs + COMMAND_GRACE_MS);
  }

  private async installAndRun(sandbox: E2BInstance, job: ToolJob): Promise<ToolRunResult> {
    const install = await this.install(sandbox, job);
    if (install && install.exitCode !== 0) {
      return {
        ...failure(job, 'PipInstallError', `pip install exited with code ${install.exitCode}`),
        ...capturedOutput(install.stdout, install.stderr, this.options.outputs),
      };
    }
    const marker = newResultMarker();
    const dir = `/tmp/letta-tool-${randomUUID()}`;
    const jobJson = JSON.stringify(framedRunnerJob(job, marker));
    await guarded(() =>
      sandbox.files.write([
        { path: `${dir}/runner.py`, data: RUNNER },
        { path: `${dir}/job.json`, data: jobJson },
      ]),
    );
    const output = await command(sandbox, runnerCommand(dir), job);
    return framedResult(job, output, marker, this.options.outputs);
  }

  /** Installs the job's requirements once per sandbox; undefined when it has none. */
  private install(sandbox: E2BInstance, job: ToolJob): Promise<CommandResult> | undefined {
    const specs = pipSpecs(job);
    if (specs.length === 0) return undefined;
    const id = sandbox.sandboxId;
    let installing = this.installs.get(id);
    if (!installing) {
      installing = command(sandbox, `python3 -m pip install ${specs.map(shellQuote).join(' ')}`, job);
      this.installs.set(id, installing);
      // A failed install is tried again by the next call.
      const forget = () => this.installs.delete(id);
      installing.then((output) => {
        if (output.exitCode !== 0) forget();
      }, forget);
    }
    return installing;
  }

  private async kill(sandbox: E2BInstance): Promise<void> {
    this.installs.delete(sandbox.sandboxId);
    // Best effort: a sandbox E2B cannot reach now dies at its own timeout anyway.
    await sandbox.kill().catch(() => false);
  }
}

/** A sandbox listed as running may have ended since: then a new one is made. */
function gone(error: unknown): undefined {
  if (error instanceof SandboxNotFoundError) return undefined;
  throw error;
}

/**
 * Runs a command with the tool's environment (pip sees it too, e.g. PIP_INDEX_URL); its non-zero
 * exit is a result, any other failure is E2B's, not the tool's.
 */
async function command(sandbox: E2BInstance, cmd: string, job: ToolJob): Promise<CommandResult> {
  try {
    return await sandbox.commands.run(cmd, { envs: job.env, timeoutMs: job.timeoutMs + COMMAND_GRACE_MS });
  } catch (error) {
    if (error instanceof CommandExitError) return error;
    throw unavailable(error);
  }
}

async function guarded<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw unavailable(error);
  }
}

const unavailable = (error: unknown) => unavailableIn('E2B', error);

/**
 * The call's folder goes with the call, so a reused sandbox keeps no earlier job (arguments, agent
 * state); the runner's exit status is kept for the caller.
 */
function runnerCommand(dir: string): string {
  return `python3 ${dir}/runner.py < ${dir}/job.json; status=$?; rm -rf ${dir}; exit $status`;
}

function configHash(template: string, job: ToolJob): string {
  const requirements = pipSpecs(job).sort();
  const env = reusableEnv(job);
  return createHash('sha256').update(JSON.stringify({ template, requirements, env })).digest('hex');
}
