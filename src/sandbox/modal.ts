/**
 * The Modal sandbox: a tool call runs the same runner as everywhere else (runner.py, or runner.mjs for
 * TypeScript) by `exec` in a Modal sandbox, through Modal's JavaScript SDK. The job goes in on stdin,
 * the result comes back framed on stdout under a marker that is random per call (as with E2B).
 *
 * Images are built once per base image and requirements (the SDK keeps a built image's id, Modal
 * keeps its layers). A sandbox is kept per configuration (image and the tool's whole environment, so
 * reuse never mixes calls that see different secrets or agents) and terminated after
 * MODAL_SANDBOX_IDLE_MS without a call; Modal's own idle timeout ends it too if this process dies.
 * Each call runs in a folder of its own, removed after it.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  ModalClient,
  type App,
  type Image,
  type Logger as ModalLogger,
  type Sandbox as ModalSandbox,
} from 'modal';
import type { Logger } from '../logger';
import { projectRoot } from '../paths';
import { ToolError } from '../returns/tool-error';
import { modalUnsupportedReason } from './modal-support';
import { newResultMarker } from './result-frame';
import {
  framedResult,
  framedRunnerJob,
  pipSpecs,
  reusableEnv,
  shellQuote,
  stopWhen,
  unavailable as unavailableIn,
} from './remote-call';
import { notStarted, stoppedResult, type OutputLimits } from './results';
import { transpileTool } from './typescript';
import { SandboxUnavailableError, type Sandbox, type ToolJob, type ToolRunResult } from './types';

export interface ModalSandboxOptions {
  tokenId: string;
  tokenSecret: string;
  /** Modal's environment (workspace part); Modal's default when unset. */
  environment?: string;
  /** The Modal app the sandboxes belong to (made if missing). */
  appName: string;
  pythonImage: string;
  nodeImage: string;
  /** Keep a configuration's sandbox for its next calls; false terminates each after its call. */
  reuse: boolean;
  /** How long a kept sandbox waits for its next call before it is terminated. */
  idleMs: number;
  /** The longest a sandbox lives, however busy (Modal's sandbox timeout). */
  lifetimeMs: number;
  outputs: OutputLimits;
  /** Where the SDK's own log lines go; the SDK's console logger when unset. */
  log?: Logger;
}

const SANDBOX_DIR = path.join(projectRoot, 'src', 'sandbox');
const PYTHON_RUNNER = readFileSync(path.join(SANDBOX_DIR, 'python', 'runner.py'), 'utf8');
const NODE_RUNNER = readFileSync(path.join(SANDBOX_DIR, 'node', 'runner.mjs'), 'utf8');

/**
 * The sandbox's working folder: calls run in folders under it, and TypeScript tools' npm requirements
 * are installed in it, so that their imports resolve there.
 */
const WORK_DIR = '/letta';

/**
 * Makes the call's folder (relative to WORK_DIR), runs the runner in it, removes it, and exits with the
 * runner's status; the folder and the command come as arguments, so nothing is quoted into the script.
 */
const IN_CALL_DIR =
  'd=$1; shift; w=$PWD; mkdir -p "$d" && cd "$d" && "$@"; s=$?; cd "$w" && rm -rf "$d"; exit $s';

/** Modal's own exec deadline, past the tool's: our timer decides the timeout. */
const EXEC_GRACE_MS = 10_000;

/** A sandbox of one configuration, serving one call at a time. */
interface KeptSandbox {
  key: string;
  sandbox: Promise<ModalSandbox>;
  busy: boolean;
  idleTimer?: NodeJS.Timeout;
  endsAt: number;
}

/** A Modal sandbox's own: it keeps sandboxes, which `close` terminates. */
export interface ModalToolSandbox extends Sandbox {
  close(): Promise<void>;
}

export function modalSandbox(options: ModalSandboxOptions): ModalToolSandbox {
  return new ModalSandboxes(options);
}

class ModalSandboxes implements ModalToolSandbox {
  private client?: ModalClient;
  private app?: Promise<App>;
  private readonly images = new Map<string, Image>();
  private readonly kept = new Set<KeptSandbox>();

  constructor(private readonly options: ModalSandboxOptions) {}

  async run(job: ToolJob, signal?: AbortSignal): Promise<ToolRunResult> {
    const unsupported = modalUnsupportedReason();
    if (unsupported) throw new SandboxUnavailableError(`Modal sandbox: ${unsupported}`);
    const marker = newResultMarker();
    let call: RunnerCall;
    try {
      call = runnerCall(job, marker);
    } catch (error) {
      if (!(error instanceof ToolError)) throw error;
      return notStarted(job, error);
    }
    const key = sandboxKey(this.imageKey(job), job);
    const kept = this.take(key, job);
    const sandbox = await kept.sandbox.catch((error: unknown) => {
      void this.forget(kept);
      throw unavailable(error);
    });
    const stop = stopWhen(job.timeoutMs, signal);
    const work = this.exec(sandbox, call, job);
    work.catch(() => undefined); // once stopped, the terminated exec's failure is expected
    try {
      const outcome = await Promise.race([work, stop.stopped]);
      if (typeof outcome === 'string') {
        // A tool that overran or was cancelled may still run: its sandbox is not reused.
        void this.forget(kept);
        return { ...stoppedResult(job, outcome, this.options.outputs), stdout: [], stderr: [] };
      }
      return outcome;
    } catch (error) {
      void this.forget(kept);
      throw unavailable(error);
    } finally {
      stop.clear();
      this.release(kept);
    }
  }

  /** Terminates every kept sandbox. */
  async close(): Promise<void> {
    await Promise.all([...this.kept].map((kept) => this.forget(kept)));
    this.client?.close();
  }

  private modal(): ModalClient {
    const { tokenId, tokenSecret, environment, log } = this.options;
    this.client ??= new ModalClient({
      tokenId,
      tokenSecret,
      ...(environment && { environment }),
      ...(log && { logger: sdkLogger(log) }),
    });
    return this.client;
  }

  private appOnce(): Promise<App> {
    this.app ??= this.modal().apps.fromName(this.options.appName, { createIfMissing: true });
    this.app.catch(() => (this.app = undefined)); // tried again by the next call
    return this.app;
  }

  /** The image a job runs in: its language's base and its requirements, one object per distinct set. */
  private imageFor(job: ToolJob): Image {
    const key = this.imageKey(job);
    let image = this.images.get(key);
    if (!image) {
      const commands = installCommands(job);
      const base = this.modal().images.fromRegistry(
        job.language === 'typescript' ? this.options.nodeImage : this.options.pythonImage,
      );
      image = commands.length ? base.dockerfileCommands(commands) : base;
      this.images.set(key, image);
    }
    return image;
  }

  private imageKey(job: ToolJob): string {
    const base = job.language === 'typescript' ? this.options.nodeImage : this.options.pythonImage;
    return JSON.stringify([base, installCommands(job)]);
  }

  /**
   * An idle sandbox of the job's configuration, or a new one; busy until released. Calls at once get
   * sandboxes of their own, so a call that is stopped (its sandbox terminated) takes no other with it.
   */
  private take(key: string, job: ToolJob): KeptSandbox {
    // A sandbox that would reach its end of life during the call is not taken.
    const lastsLongEnough = (kept: KeptSandbox) => kept.endsAt > Date.now() + job.timeoutMs + EXEC_GRACE_MS;
    const idle = [...this.kept].find((kept) => kept.key === key && !kept.busy && lastsLongEnough(kept));
    if (idle) {
      clearTimeout(idle.idleTimer);
      idle.busy = true;
      return idle;
    }
    const lifetimeMs = Math.max(this.options.lifetimeMs, job.timeoutMs + 2 * EXEC_GRACE_MS);
    const kept = { key, sandbox: this.create(job, lifetimeMs), busy: true, endsAt: Date.now() + lifetimeMs };
    this.kept.add(kept);
    return kept;
  }

  private async create(job: ToolJob, lifetimeMs: number): Promise<ModalSandbox> {
    const app = await this.appOnce();
    return this.modal().sandboxes.create(app, this.imageFor(job), {
      timeoutMs: lifetimeMs,
      workdir: WORK_DIR,
      idleTimeoutMs: Math.max(this.options.idleMs, job.timeoutMs + EXEC_GRACE_MS),
    });
  }

  private release(kept: KeptSandbox): void {
    kept.busy = false;
    if (!this.kept.has(kept)) return;
    if (!this.options.reuse) return void this.forget(kept);
    kept.idleTimer = setTimeout(() => void this.forget(kept), this.options.idleMs);
    kept.idleTimer.unref();
  }

  /** Not reused any more; terminated (best effort: Modal ends it at its timeouts anyway). */
  private async forget(kept: KeptSandbox): Promise<void> {
    clearTimeout(kept.idleTimer);
    this.kept.delete(kept);
    const sandbox = await kept.sandbox.catch(() => undefined);
    await sandbox?.terminate().catch(() => undefined);
  }

  private async exec(sandbox: ModalSandbox, call: RunnerCall, job: ToolJob): Promise<ToolRunResult> {
    const process = await sandbox.exec(call.command, {
      stdout: 'pipe',
      stderr: 'pipe',
      env: job.env,
      timeoutMs: job.timeoutMs + EXEC_GRACE_MS,
    });
    await process.stdin.writeText(call.input);
    await process.stdin.close();
    const [stdout, stderr] = await Promise.all([process.stdout.readText(), process.stderr.readText()]);
    const exitCode = await process.wait();
    return framedResult(job, { stdout, stderr, exitCode }, call.marker, this.options.outputs);
  }
}

/** The command that runs the job's runner in a folder of its own, and the job it reads on stdin. */
interface RunnerCall {
  command: string[];
  input: string;
  marker: string;
}

function runnerCall(job: ToolJob, marker: string): RunnerCall {
  const dir = `calls/${randomUUID()}`;
  const inDir = (argv: string[]) => ['sh', '-c', IN_CALL_DIR, 'sh', dir, ...argv];
  if (job.language === 'typescript') {
    const { js, paramOrder } = transpileTool(job.source, job.name);
    const input = {
      source: js,
      name: job.name,
      args: job.args,
      param_order: paramOrder,
      return_char_limit: job.returnCharLimit,
      tool_file: 'tool.mjs', // in the call's folder
      marker,
    };
    const command = inDir(['node', '--input-type=module', '-e', NODE_RUNNER]);
    return { command, input: JSON.stringify(input), marker };
  }
  const input = JSON.stringify(framedRunnerJob(job, marker));
  return { command: inDir(['python3', '-c', PYTHON_RUNNER]), input, marker };
}

/** The image layers that install a job's requirements: pip for Python, npm (into /letta) for TypeScript. */
function installCommands(job: ToolJob): string[] {
  if (job.language === 'typescript') {
    const specs = (job.npmRequirements ?? []).map((r) => (r.version ? `${r.name}@${r.version}` : r.name));
    if (!specs.length) return [];
    return [
      `RUN mkdir -p ${WORK_DIR} && cd ${WORK_DIR} && npm install --no-save ${specs.map(shellQuote).join(' ')}`,
    ];
  }
  const specs = pipSpecs(job);
  if (!specs.length) return [];
  return [`RUN python3 -m pip install --no-cache-dir ${specs.map(shellQuote).join(' ')}`];
}

/** The image and the whole environment: a sandbox is only shared by calls that see the same. */
function sandboxKey(imageKey: string, job: ToolJob): string {
  return createHash('sha256')
    .update(JSON.stringify({ imageKey, env: reusableEnv(job) }))
    .digest('hex');
}

/** The SDK logs a message and key-value pairs. */
function sdkLogger(log: Logger): ModalLogger {
  const at =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (message: string, ...pairs: unknown[]) => {
      const fields = Object.fromEntries(
        Array.from({ length: Math.floor(pairs.length / 2) }, (_, i) => [
          String(pairs[2 * i]),
          pairs[2 * i + 1],
        ]),
      );
      log[level]({ modal: fields }, `Modal SDK: ${message}`);
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const unavailable = (error: unknown) => unavailableIn('Modal', error);
