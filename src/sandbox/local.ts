/**
 * The local sandbox: the tool runs in bubblewrap with a read-only view of /usr, private tmpfs work
 * directory and /tmp, no network, a non-root uid, no capabilities and only the environment it is given;
 * it dies with its parent. The runner sets rlimits on itself before the tool's code runs, and a cgroup
 * caps memory and processes where the hierarchy is writable. The job goes in on stdin, the result comes
 * back on fd 3 (runner.py), apart from the tool's own stdout and stderr, which are captured and capped.
 *
 * `isolation: 'none'` is the operator's explicit `local-unsafe` choice for hosts where bubblewrap
 * cannot run: the same runner and limits in a plain subprocess, still with a cleared environment.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../paths';
import type { Cgroups } from './cgroups';
import type { WarmPool } from './warm-pool';
import { pythonEnvironment, type PythonEnvironment, type PythonEnvOptions } from './python-env';
import { failure, lines, parsedResult, stoppedResult, type Stop } from './results';
import { ToolError } from '../tools/tool-error';
import { nodeCommand, type NodeRuntimeOptions } from './node-runtime';
import { bubblewrapCommand, NOBODY, unprivileged, WORK_DIR, type Command } from './bubblewrap';
import {
  SandboxUnavailableError,
  type Sandbox,
  type ToolJob,
  type ToolLimits,
  type ToolRunResult,
} from './types';

const RUNNER_DIR = path.join(projectRoot, 'src', 'sandbox', 'python');

export interface LocalSandboxOptions {
  isolation: 'bubblewrap' | 'none';
  bwrap: string;
  /** The Python inside the sandbox: the system one under /usr. */
  python: string;
  maxOutputBytes: number;
  /** Size of each of the private tmpfs mounts (work directory and /tmp). */
  tmpBytes: number;
  limits: ToolLimits;
  cgroups: Cgroups;
  /** Where tools' pip requirements are installed, a venv per requirements hash. */
  pythonEnvs: PythonEnvOptions;
  /** Warm runners for bubblewrap; null: a cold sandbox per call. */
  warmPool: WarmPool | null;
  node: NodeRuntimeOptions;
}

const baseEnv = (job: Pick<ToolJob, 'env'>) => ({ ...job.env, PATH: '/usr/bin:/bin', HOME: WORK_DIR });

export const toolEnv = (job: Pick<ToolJob, 'env'>) => ({
  ...baseEnv(job),
  PYTHONDONTWRITEBYTECODE: '1',
  PYTHONUNBUFFERED: '1',
});

/** The Python runner (`script` in /sandbox), on the tool's venv (bound read-only at /venv) if it has one. */
export function pythonInSandbox(
  environment: Record<string, string>,
  options: LocalSandboxOptions,
  venv: PythonEnvironment | null,
  script: string[],
  network = false,
): Command {
  const mounts = ['--ro-bind', RUNNER_DIR, '/sandbox', ...(venv ? ['--ro-bind', venv.root, '/venv'] : [])];
  const argv = [venv ? '/venv/bin/python' : options.python, '-I', ...script];
  const { bwrap, tmpBytes } = options;
  return bubblewrapCommand({ bwrap, tmpBytes, env: environment, extraArgs: mounts, network }, argv);
}

function plainCommand(
  job: ToolJob,
  options: LocalSandboxOptions,
  venv: PythonEnvironment | null,
  cwd: string,
): Command {
  return {
    file: venv?.python ?? options.python,
    args: ['-I', path.join(RUNNER_DIR, 'runner.py')],
    env: { ...toolEnv(job), HOME: cwd },
    cwd,
  };
}

/** Collects a stream up to `max` bytes; the rest is counted, not kept. */
function capped(max: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  return {
    add(chunk: Buffer) {
      if (size < max) chunks.push(chunk.subarray(0, max - size));
      size += chunk.length;
    },
    get size() {
      return size;
    },
    text: () => Buffer.concat(chunks).toString('utf8'),
  };
}

/** What runner.py (or, per call, forkserver.py) is given. */
const runnerJob = (job: ToolJob, options: LocalSandboxOptions) => ({
  source: job.source,
  args: job.args,
  env: toolEnv(job),
  limits: options.limits,
  agent_state: job.agentState,
  agent_id: job.agentId,
});

/** Runs one job in one process (group); resolves with Letta's result, rejects only when nothing could start. */
function runProcess(
  command: Command,
  job: ToolJob,
  input: string,
  options: LocalSandboxOptions,
  signal?: AbortSignal,
): Promise<ToolRunResult> {
  return new Promise((resolve, reject) => {
    const cgroup = options.cgroups.create();
    const child = spawn(command.file, command.args, {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      detached: true,
      env: command.env,
      cwd: command.cwd,
    });
    const stdout = capped(options.maxOutputBytes);
    const stderr = capped(options.maxOutputBytes);
    const result = capped(options.maxOutputBytes);
    let stopped: Stop | undefined;
    // The whole process group: a tool's own children die with it.
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const kill = (why: Stop) => {
      stopped ??= why;
      killGroup();
    };
    const onOutput = (stream: ReturnType<typeof capped>) => (chunk: Buffer) => {
      stream.add(chunk);
      if (stdout.size + stderr.size > options.maxOutputBytes) kill('output');
    };
    child.stdout!.on('data', onOutput(stdout));
    child.stderr!.on('data', onOutput(stderr));
    (child.stdio[3] as NodeJS.ReadableStream).on('data', result.add);
    const timer = setTimeout(() => kill('timeout'), job.timeoutMs);
    const onAbort = () => kill('cancelled');
    signal?.addEventListener('abort', onAbort);
    const settle = async () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      await cgroup?.remove();
    };
    child.on('error', (error) => {
      void settle().then(() =>
        reject(
          new SandboxUnavailableError(`cannot start the local sandbox (${command.file}): ${error.message}`),
        ),
      );
    });
    // Once the runner is gone, what it left behind in its group goes too (and releases the pipes).
    child.on('exit', killGroup);
    child.on('close', (code) => {
      void settle().then(() => {
        const captured = { stdout: lines(stdout.text()), stderr: lines(stderr.text()) };
        if (stopped) return resolve({ ...stoppedResult(job, stopped, options.maxOutputBytes), ...captured });
        resolve({ ...parsedResult(job, result.text(), code), ...captured });
      });
    });
    if (child.pid) cgroup?.add(child.pid);
    child.stdin!.on('error', () => undefined); // a tool that exits before reading its job
    child.stdin!.end(input);
  });
}

export function localSandbox(options: LocalSandboxOptions): Sandbox {
  const runPython = async (job: ToolJob, venv: PythonEnvironment | null, signal?: AbortSignal) => {
    const { warmPool } = options;
    const payload = runnerJob(job, options);
    if (options.isolation === 'bubblewrap' && warmPool) {
      const script = ['/sandbox/forkserver.py', String(options.maxOutputBytes)];
      const network = Boolean(job.network);
      const command = () =>
        unprivileged(pythonInSandbox(toolEnv({ env: {} }), options, venv, script, network));
      // A runner is for one environment and one network setting.
      const key = `${venv?.root ?? 'system'}${network ? '+network' : ''}`;
      return warmPool.run(key, command, job, payload, signal);
    }
    if (options.isolation === 'bubblewrap') {
      const command = pythonInSandbox(toolEnv(job), options, venv, ['/sandbox/runner.py'], job.network);
      return runProcess(unprivileged(command), job, JSON.stringify(payload), options, signal);
    }
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-tool-'));
    try {
      if (process.getuid?.() === 0) fs.chownSync(cwd, NOBODY, NOBODY);
      return await runProcess(
        unprivileged(plainCommand(job, options, venv, cwd)),
        job,
        JSON.stringify(payload),
        options,
        signal,
      );
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  };

  const runTypeScript = async (job: ToolJob, signal?: AbortSignal) => {
    if (options.isolation !== 'bubblewrap')
      throw new ToolError('TypeScript tools run only in the bubblewrap sandbox (SANDBOX_TYPE=local)');
    const node = await nodeCommand(job, options.node);
    const env = { ...baseEnv(job), ...node.env };
    const { bwrap, tmpBytes } = options;
    const profile = { bwrap, tmpBytes, env, extraArgs: node.mounts, network: job.network };
    const command = bubblewrapCommand(profile, node.argv);
    return runProcess(unprivileged(command), job, node.input, options, signal);
  };

  return {
    async run(job, signal) {
      try {
        if (job.language === 'typescript') return await runTypeScript(job, signal);
        const venv = await pythonEnvironment(job.pipRequirements ?? [], options.pythonEnvs);
        return await runPython(job, venv, signal);
      } catch (error) {
        // The tool's own fault: a source that does not compile, requirements that do not install.
        if (!(error instanceof ToolError)) throw error;
        return { ...failure(job, error.name, error.message), stdout: [], stderr: [] };
      }
    },
  };
}
