/**
 * Warm runners: a sandbox started ahead of time per environment (system Python, or one venv) running
 * forkserver.py, which runs each job as one call in namespaces of its own (a fresh /tmp, /work and
 * /dev/shm, a PID namespace whose end kills all the call started), set up ahead. A call then costs a
 * fork instead of a sandbox and an interpreter start, and sees nothing an earlier one left. A runner
 * does one job at a time; a timeout or a cancellation kills the whole runner (sandbox and all) and a
 * fresh one takes its place. A runner that dies during a call (its memory or process limit reached,
 * say) is that call's error, and the next call gets a fresh runner; only a runner that cannot start
 * at all means the sandbox is unavailable.
 */
import { sandboxStartFailures, trackSandboxPool } from '../observability/metrics';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Cgroups, LimitHits, ToolCgroup } from './cgroups';
import type { Command } from './bubblewrap';
import {
  bubblewrapEnding,
  describeEnding,
  failure,
  limitHit,
  outputLines,
  parsedResult,
  signalName,
  stoppedResult,
  type Ending,
  type KeptOutput,
  type OutputLimits,
  type Stop,
} from './results';
import { SandboxUnavailableError, type ToolJob, type ToolRunResult } from './types';

export interface WarmPoolOptions {
  /** Idle runners kept per environment. */
  size: number;
  /** An idle runner is stopped after this long. */
  idleMs: number;
  outputs: OutputLimits;
  cgroups: Cgroups;
}

/** What forkserver.py answers per job. */
interface Reply {
  result: string | null;
  stdout: KeptOutput;
  stderr: KeptOutput;
  stopped: 'output' | 'result' | null;
  /** How the call's process ended; both null when it answered (it is reaped after the reply). */
  code: number | null;
  signal: number | null;
}

/** Why the call's own namespaces could not be set up: the runner cannot run calls. */
interface Unavailable {
  unavailable: string;
}

/** forkserver.py's first line, once it could set up its first call. */
interface Ready {
  ready: true;
}

class WarmRunner {
  private replies: (Reply | Unavailable)[] = [];
  private waiting?: (reply: Reply | Unavailable | null) => void;
  private exited = false;
  private ready = false;
  private ending?: Ending;
  /** The cgroup's counters as the runner ended, read before the cgroup goes. */
  private lastHits?: LimitHits;
  private stderr = '';
  private idleTimer?: NodeJS.Timeout;

  private constructor(
    private child: ChildProcess,
    private cgroup: ToolCgroup | null,
  ) {
    const answers = createInterface({ input: child.stdio[3] as NodeJS.ReadableStream });
    answers.on('line', (line) => this.deliver(JSON.parse(line) as Reply | Unavailable | Ready));
    child.stderr!.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk).slice(-2000)));
    child.stdin!.on('error', () => undefined); // a runner that died before reading
    child.on('exit', () => (this.exited = true));
    // Once its output is all read: a reply it sent just before it died is not lost.
    child.on('close', (code, signal) => {
      this.exited = true;
      this.ending = bubblewrapEnding(code, signal);
      this.lastHits = this.cgroup?.hits();
      this.waiting?.(null);
      void this.cgroup?.remove();
    });
  }

  static start(command: Command, cgroups: Cgroups): WarmRunner {
    const cgroup = cgroups.create();
    const program = cgroup ? cgroup.join(command) : command;
    const child = spawn(program.file, program.args, {
      stdio: ['pipe', 'ignore', 'pipe', 'pipe'],
      detached: true,
      env: command.env,
    });
    return new WarmRunner(child, cgroup);
  }

  get alive() {
    return !this.exited;
  }

  /** It could set up a call: a death from now on is a call's, not the sandbox's. */
  get started() {
    return this.ready;
  }

  private deliver(line: Reply | Unavailable | Ready) {
    if ('ready' in line) this.ready = true;
    else if (this.waiting) this.waiting(line);
    else this.replies.push(line);
  }

  /** The reply to the job, or null when the runner died first. */
  send(job: object): Promise<Reply | Unavailable | null> {
    clearTimeout(this.idleTimer);
    if (this.exited) return Promise.resolve(null);
    const reply = new Promise<Reply | Unavailable | null>((resolve) => {
      this.waiting = (answer) => {
        this.waiting = undefined;
        resolve(answer);
      };
    });
    this.child.stdin!.write(JSON.stringify(job) + '\n');
    return reply;
  }

  hits(): LimitHits | undefined {
    return this.exited ? this.lastHits : this.cgroup?.hits();
  }

  whyDead() {
    return this.stderr.trim() || 'the warm runner exited';
  }

  /** How it died, and why when its cgroup says so. */
  death(before: LimitHits | undefined) {
    const how = this.ending ? describeEnding(this.ending) : 'died';
    const cause = limitHit(before, this.hits()) ?? this.stderr.trim().split('\n').at(-1);
    return `the sandbox runner ${how} during the call${cause ? ` (${cause})` : ''}`;
  }

  idleFor(ms: number, onExpiry: () => void) {
    this.idleTimer = setTimeout(onExpiry, ms).unref();
  }

  kill() {
    try {
      if (this.child.pid) process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

export interface WarmPool {
  run(
    key: string,
    command: () => Command,
    job: ToolJob,
    payload: object,
    signal?: AbortSignal,
  ): Promise<ToolRunResult>;
  close(): void;
}

/** The pool's runners: the idle ones by key, every one started, and whether the pool is closed. */
interface Runners {
  options: WarmPoolOptions;
  idle: Map<string, WarmRunner[]>;
  // Every runner started, idle or busy: closing the pool kills them all, even one busy then.
  started: Set<WarmRunner>;
  closed: boolean;
}

export function warmPool(options: WarmPoolOptions): WarmPool {
  const pool: Runners = { options, idle: new Map(), started: new Set(), closed: false };
  const untrack = trackSandboxPool(() => ({
    size: options.size,
    runners: pool.started.size,
    idle: [...pool.idle.values()].reduce((sum, runners) => sum + runners.length, 0),
  }));
  return {
    run: (key, command, job, payload, signal) => runCall(pool, key, command, job, payload, signal),
    close() {
      pool.closed = true;
      untrack();
      pool.idle.clear();
      [...pool.started].forEach((runner) => retire(pool, runner));
    },
  };
}

function startRunner(pool: Runners, command: () => Command): WarmRunner {
  const runner = WarmRunner.start(command(), pool.options.cgroups);
  pool.started.add(runner);
  return runner;
}

function retire(pool: Runners, runner: WarmRunner): void {
  pool.started.delete(runner);
  runner.kill();
}

function release(pool: Runners, key: string, runner: WarmRunner): void {
  const runners = pool.idle.get(key) ?? [];
  if (pool.closed || !runner.alive || runners.length >= pool.options.size) return retire(pool, runner);
  runners.push(runner);
  pool.idle.set(key, runners);
  runner.idleFor(pool.options.idleMs, () => {
    runners.splice(runners.indexOf(runner), 1);
    retire(pool, runner);
  });
}

/**
 * The runner idle the longest: the one released last may still be tearing its call down and setting
 * the next one up. With room for another, a spare starts beside it, so that calls in a row alternate
 * between two runners and none waits for the set-up that follows the call before.
 */
function take(pool: Runners, key: string, command: () => Command): WarmRunner {
  const runners = pool.idle.get(key) ?? [];
  let runner = runners.shift();
  while (runner && !runner.alive) runner = runners.shift();
  if (!runners.length && pool.options.size > 1 && !pool.closed)
    release(pool, key, startRunner(pool, command));
  return runner ?? startRunner(pool, command);
}

function resultOf(options: WarmPoolOptions, job: ToolJob, reply: Reply, cause: string | null): ToolRunResult {
  const captured = { stdout: outputLines(reply.stdout), stderr: outputLines(reply.stderr) };
  if (reply.stopped) return { ...stoppedResult(job, reply.stopped, options.outputs), ...captured };
  const ending = { code: reply.code, signal: signalName(reply.signal) };
  return { ...parsedResult(job, reply.result ?? '', ending, cause), ...captured };
}

/** Runs one call on a runner of `key`, stopped at its timeout or when `signal` aborts. */
async function runCall(
  pool: Runners,
  key: string,
  command: () => Command,
  job: ToolJob,
  payload: object,
  signal?: AbortSignal,
): Promise<ToolRunResult> {
  const runner = take(pool, key, command);
  const before = runner.hits();
  let stopped: Stop | undefined;
  const stop = (why: Stop) => {
    stopped ??= why;
    runner.kill();
  };
  const timer = setTimeout(() => stop('timeout'), job.timeoutMs);
  const onAbort = () => stop('cancelled');
  signal?.addEventListener('abort', onAbort);
  try {
    const reply = await runner.send(payload);
    if (stopped) {
      retire(pool, runner);
      return { ...stoppedResult(job, stopped, pool.options.outputs), stdout: [], stderr: [] };
    }
    if (!reply) {
      pool.started.delete(runner);
      if (!runner.started) {
        sandboxStartFailures.inc();
        throw new SandboxUnavailableError(`the warm sandbox runner did not start: ${runner.whyDead()}`);
      }
      return { ...failure(job, 'SandboxError', runner.death(before)), stdout: [], stderr: [] };
    }
    if ('unavailable' in reply) {
      retire(pool, runner);
      sandboxStartFailures.inc();
      throw new SandboxUnavailableError(`the warm sandbox runner cannot set up a call: ${reply.unavailable}`);
    }
    release(pool, key, runner);
    return resultOf(pool.options, job, reply, limitHit(before, runner.hits()));
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}
