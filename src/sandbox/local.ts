/**
 * The local sandbox: the tool runs in bubblewrap with a read-only view of /usr, a read-only root, private
 * tmpfs work directory, /tmp and /dev/shm (the only places it can write), its own PID namespace (whose
 * end kills every process the tool started), no network, a non-root uid, no capabilities and only the
 * environment it is given; it dies with its parent. The runner sets rlimits on itself before the
 * tool's code runs, and a cgroup caps memory and processes where the hierarchy is writable. The job
 * goes in on stdin, the result comes back on fd 3 (runner.py), apart from the tool's own stdout and
 * stderr, which are captured and capped (OutputLimits).
 *
 * `isolation: 'none'` is the operator's explicit `local-unsafe` choice for hosts where bubblewrap
 * cannot run: the same runner and limits in a plain subprocess, still with a cleared environment, but
 * nothing of the isolation above (files, processes and the host's network stay reachable).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../paths';
import type { Cgroups } from './cgroups';
import type { WarmPool } from './warm-pool';
import { pythonEnvironment, type PythonEnvironment, type PythonEnvOptions } from './python-env';
import {
  bubblewrapEnding,
  notStarted,
  limitHit,
  outputKeeper,
  outputLines,
  parsedResult,
  stoppedResult,
  type OutputLimits,
  type Stop,
} from './results';
import { ToolError } from '../returns/tool-error';
import { nodeCommand, type NodeRuntimeOptions } from './node-runtime';
import { bubblewrapCommand, NOBODY, unprivileged, WORK_DIR, type Command } from './bubblewrap';
import { reachableFolder } from './reach';
import {
  BRIDGED_API_PORT,
  SandboxUnavailableError,
  type Sandbox,
  type ToolJob,
  type ToolLimits,
  type ToolRunResult,
} from './types';

const RUNNER_DIR = reachableFolder(path.join(projectRoot, 'src', 'sandbox', 'python'));
const BRIDGE_SCRIPT = path.join(RUNNER_DIR, 'api_bridge.py');

export interface LocalSandboxOptions {
  isolation: 'bubblewrap' | 'none';
  bwrap: string;
  /** The Python inside the sandbox: the system one under /usr. */
  python: string;
  outputs: OutputLimits;
  /** Size of each of the private tmpfs mounts (/work, /tmp and /dev/shm). */
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

/** Where a sandbox without a network finds the API's bridge and socket. */
const BRIDGE_DIR = '/run/letta';

/**
 * `argv` and its mounts, behind the API's bridge when the job has the API's socket: the socket is
 * bound in, and api_bridge.py (on the system Python) listens on BRIDGED_API_PORT before it execs
 * `argv`. The socket is a socket, so a read-only bind still connects.
 */
function bridged(
  job: Pick<ToolJob, 'apiSocket'>,
  options: LocalSandboxOptions,
  mounts: string[],
  argv: string[],
): { mounts: string[]; argv: string[] } {
  if (!job.apiSocket) return { mounts, argv };
  const [script, socket] = [`${BRIDGE_DIR}/api_bridge.py`, `${BRIDGE_DIR}/api.sock`];
  return {
    mounts: [...mounts, '--ro-bind', BRIDGE_SCRIPT, script, '--ro-bind', job.apiSocket, socket],
    argv: [options.python, '-I', script, socket, String(BRIDGED_API_PORT), ...argv],
  };
}

/** The Python runner (`script` in /sandbox), on the tool's venv (bound read-only at /venv) if it has one. */
export function pythonInSandbox(
  environment: Record<string, string>,
  options: LocalSandboxOptions,
  venv: PythonEnvironment | null,
  script: string[],
  job: Pick<ToolJob, 'network' | 'apiSocket'> = {},
): Command {
  const { mounts, argv } = bridged(
    job,
    options,
    ['--ro-bind', RUNNER_DIR, '/sandbox', ...(venv ? ['--ro-bind', venv.root, '/venv'] : [])],
    [venv ? '/venv/bin/python' : options.python, '-I', ...script],
  );
  const { bwrap, tmpBytes } = options;
  const profile = { bwrap, tmpBytes, env: environment, extraArgs: mounts, network: job.network };
  return bubblewrapCommand(profile, argv);
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

/** Collects a stream up to `max` bytes; past that, `over` is called once and nothing more is kept. */
function capped(max: number, over: () => void) {
  const chunks: Buffer[] = [];
  let size = 0;
  return {
    add(chunk: Buffer) {
      if (size > max) return;
      size += chunk.length;
      if (size > max) over();
      else chunks.push(chunk);
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
  return_char_limit: job.returnCharLimit,
  agent_state: job.agentState,
  agent_id: job.agentId,
});

/** What forkserver.py is started with. */
const forkServerSettings = (options: LocalSandboxOptions) =>
  JSON.stringify({
    max_output: options.outputs.maxOutputBytes,
    keep_output: options.outputs.keepOutputBytes,
    max_result: options.outputs.maxResultBytes,
    tmp_bytes: options.tmpBytes,
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
    const program = cgroup ? cgroup.join(command) : command;
    const child = spawn(program.file, program.args, {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      detached: true,
      env: command.env,
      cwd: command.cwd,
    });
    const { outputs } = options;
    const stdout = outputKeeper(outputs.keepOutputBytes);
    const stderr = outputKeeper(outputs.keepOutputBytes);
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
    const onOutput = (stream: ReturnType<typeof outputKeeper>) => (chunk: Buffer) => {
      stream.add(chunk);
      if (stdout.size + stderr.size > outputs.maxOutputBytes) kill('output');
    };
    child.stdout!.on('data', onOutput(stdout));
    child.stderr!.on('data', onOutput(stderr));
    const result = capped(outputs.maxResultBytes, () => kill('result'));
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
    child.on('close', (code, signal) => {
      // The call's own cgroup, fresh: every hit counted is this call's.
      const cause = cgroup ? limitHit({ memory: 0, processes: 0 }, cgroup.hits()) : null;
      void settle().then(() => {
        const captured = { stdout: outputLines(stdout.kept()), stderr: outputLines(stderr.kept()) };
        if (stopped) return resolve({ ...stoppedResult(job, stopped, outputs), ...captured });
        const ending = options.isolation === 'bubblewrap' ? bubblewrapEnding(code, signal) : { code, signal };
        resolve({ ...parsedResult(job, result.text(), ending, cause), ...captured });
      });
    });
    child.stdin!.on('error', () => undefined); // a tool that exits before reading its job
    child.stdin!.end(input);
  });
}

export function localSandbox(options: LocalSandboxOptions): Sandbox {
  const runPython = async (job: ToolJob, venv: PythonEnvironment | null, signal?: AbortSignal) => {
    const { warmPool } = options;
    const payload = runnerJob(job, options);
    if (options.isolation === 'bubblewrap' && warmPool) {
      const script = ['/sandbox/forkserver.py', forkServerSettings(options)];
      const reach = { network: job.network, apiSocket: job.apiSocket };
      const command = () => unprivileged(pythonInSandbox(toolEnv({ env: {} }), options, venv, script, reach));
      // A runner is for one environment and one way out.
      const key = [venv?.root ?? 'system', job.network && 'network', job.apiSocket].filter(Boolean).join('+');
      return warmPool.run(key, command, job, payload, signal);
    }
    if (options.isolation === 'bubblewrap') {
      const command = pythonInSandbox(toolEnv(job), options, venv, ['/sandbox/runner.py'], job);
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
    const { mounts, argv } = bridged(job, options, node.mounts, node.argv);
    const command = bubblewrapCommand(
      { bwrap, tmpBytes, env, extraArgs: mounts, network: job.network },
      argv,
    );
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
        return notStarted(job, error);
      }
    },
  };
}
