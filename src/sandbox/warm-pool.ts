/**
 * Warm runners: a sandbox started ahead of time per environment (system Python, or one venv) running
 * forkserver.py, which forks a fresh child per job. A call then costs a fork instead of a sandbox and
 * an interpreter start. A runner does one job at a time; a timeout or a cancellation kills the whole
 * runner (sandbox and all) and a fresh one takes its place. Children of one runner share its tmpfs
 * mounts, each in its own work folder that is removed after the call.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Cgroups, ToolCgroup } from './cgroups';
import type { Command } from './bubblewrap';
import { lines, parsedResult, stoppedResult, type Stop } from './results';
import { SandboxUnavailableError, type ToolJob, type ToolRunResult } from './types';

export interface WarmPoolOptions {
  /** Idle runners kept per environment. */
  size: number;
  /** An idle runner is stopped after this long. */
  idleMs: number;
  maxOutputBytes: number;
  cgroups: Cgroups;
}

/** What forkserver.py answers per job. */
interface Reply {
  result: string | null;
  stdout: string;
  stderr: string;
  stopped: 'output' | null;
  /** Null when the child answered (it is reaped after the reply). */
  code: number | null;
}

class WarmRunner {
  private replies: Reply[] = [];
  private waiting?: (reply: Reply | null) => void;
  private exited = false;
  private stderr = '';
  private idleTimer?: NodeJS.Timeout;

  private constructor(
    private child: ChildProcess,
    private cgroup: ToolCgroup | null,
  ) {
    const answers = createInterface({ input: child.stdio[3] as NodeJS.ReadableStream });
    answers.on('line', (line) => this.deliver(JSON.parse(line) as Reply));
    child.stderr!.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk).slice(-2000)));
    child.stdin!.on('error', () => undefined); // a runner that died before reading
    child.on('exit', () => {
      this.exited = true;
      this.waiting?.(null);
      void this.cgroup?.remove();
    });
  }

  static start(command: Command, cgroups: Cgroups): WarmRunner {
    const cgroup = cgroups.create();
    const child = spawn(command.file, command.args, {
      stdio: ['pipe', 'ignore', 'pipe', 'pipe'],
      detached: true,
      env: command.env,
    });
    if (child.pid) cgroup?.add(child.pid);
    return new WarmRunner(child, cgroup);
  }

  get alive() {
    return !this.exited;
  }

  private deliver(reply: Reply) {
    if (this.waiting) this.waiting(reply);
    else this.replies.push(reply);
  }

  /** The reply to the job, or null when the runner died first. */
  send(job: object): Promise<Reply | null> {
    clearTimeout(this.idleTimer);
    if (this.exited) return Promise.resolve(null);
    const reply = new Promise<Reply | null>((resolve) => {
      this.waiting = (answer) => {
        this.waiting = undefined;
        resolve(answer);
      };
    });
    this.child.stdin!.write(JSON.stringify(job) + '\n');
    return reply;
  }

  whyDead() {
    return this.stderr.trim() || 'the warm runner exited';
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

export function warmPool(options: WarmPoolOptions): WarmPool {
  const idle = new Map<string, WarmRunner[]>();
  // Every runner started, idle or busy: closing the pool kills them all, even one busy then.
  const started = new Set<WarmRunner>();
  let closed = false;

  const take = (key: string, command: () => Command) => {
    const runners = idle.get(key) ?? [];
    for (let runner = runners.pop(); runner; runner = runners.pop()) if (runner.alive) return runner;
    const runner = WarmRunner.start(command(), options.cgroups);
    started.add(runner);
    return runner;
  };

  const retire = (runner: WarmRunner) => {
    started.delete(runner);
    runner.kill();
  };

  const release = (key: string, runner: WarmRunner) => {
    const runners = idle.get(key) ?? [];
    if (closed || !runner.alive || runners.length >= options.size) return retire(runner);
    runners.push(runner);
    idle.set(key, runners);
    runner.idleFor(options.idleMs, () => {
      runners.splice(runners.indexOf(runner), 1);
      retire(runner);
    });
  };

  const resultOf = (job: ToolJob, reply: Reply): ToolRunResult => {
    const captured = { stdout: lines(reply.stdout), stderr: lines(reply.stderr) };
    if (reply.stopped) return { ...stoppedResult(job, reply.stopped, options.maxOutputBytes), ...captured };
    return { ...parsedResult(job, reply.result ?? '', reply.code), ...captured };
  };

  return {
    async run(key, command, job, payload, signal) {
      const runner = take(key, command);
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
        if (!runner.alive) started.delete(runner);
        if (stopped)
          return { ...stoppedResult(job, stopped, options.maxOutputBytes), stdout: [], stderr: [] };
        if (!reply) throw new SandboxUnavailableError(`the warm sandbox runner died: ${runner.whyDead()}`);
        release(key, runner);
        return resultOf(job, reply);
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      }
    },
    close() {
      closed = true;
      idle.clear();
      [...started].forEach(retire);
    },
  };
}
