/**
 * The local sandbox: the tool runs in bubblewrap with a read-only view of /usr, a private /tmp, no
 * network, a non-root uid, no capabilities and only the environment it is given; it dies with its
 * parent. The job goes in on stdin, the result comes back on fd 3 (runner.py), apart from the tool's
 * own stdout and stderr, which are captured and capped.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../paths';
import { ToolError } from '../tools/tool-error';
import { nodeCommand, type NodeRuntimeOptions } from './node-runtime';
import {
  SandboxUnavailableError,
  type Sandbox,
  type SandboxCommand,
  type ToolJob,
  type ToolRunResult,
} from './types';

const RUNNER_DIR = path.join(projectRoot, 'src', 'sandbox', 'python');

export interface LocalSandboxOptions {
  bwrap: string;
  /** The Python inside the sandbox: the system one under /usr. */
  python: string;
  /** TypeScript tools: the node they run on, and their npm requirements. */
  node: NodeRuntimeOptions;
  maxOutputBytes: number;
}

function pythonCommand(job: ToolJob, python: string): SandboxCommand {
  return {
    mounts: ['--ro-bind', RUNNER_DIR, '/sandbox'],
    env: { PYTHONDONTWRITEBYTECODE: '1' },
    argv: [python, '-I', '/sandbox/runner.py'],
    input: JSON.stringify({ source: job.source, args: job.args }),
  };
}

/** What runs the job, by its language. */
const commandFor = async (job: ToolJob, options: LocalSandboxOptions) =>
  job.language === 'typescript' ? nodeCommand(job, options.node) : pythonCommand(job, options.python);

function bubblewrapArgs(job: ToolJob, command: SandboxCommand): string[] {
  const env = Object.entries({
    ...job.env,
    PATH: '/usr/bin:/bin',
    HOME: '/tmp',
    ...command.env,
  });
  return [
    '--ro-bind', '/usr', '/usr',
    '--symlink', 'usr/lib', '/lib',
    '--symlink', 'usr/lib64', '/lib64',
    '--symlink', 'usr/bin', '/bin',
    '--proc', '/proc',
    '--dev', '/dev',
    '--tmpfs', '/tmp',
    ...command.mounts,
    '--chdir', '/tmp',
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    '--cap-drop', 'ALL',
    '--uid', '65534',
    '--gid', '65534',
    '--clearenv',
    ...env.flatMap(([key, value]) => ['--setenv', key, value]),
    ...command.argv,
  ]; // prettier-ignore
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
    text() {
      const text = Buffer.concat(chunks).toString('utf8');
      return size > max ? `${text}\n[output truncated: ${size - max} more bytes]` : text;
    },
  };
}

const failure = (
  job: ToolJob,
  kind: string,
  message: string,
): Pick<ToolRunResult, 'status' | 'funcReturn'> => ({
  status: 'error',
  funcReturn: `Error executing function ${job.name}: ${kind}: ${message}`,
});

export function localSandbox(options: LocalSandboxOptions): Sandbox {
  return {
    async run(job, signal) {
      let command: SandboxCommand;
      try {
        command = await commandFor(job, options);
      } catch (error) {
        // The tool's own fault (a source that does not compile, requirements that do not install).
        if (!(error instanceof ToolError)) throw error;
        return { ...failure(job, error.name, error.message), stdout: [], stderr: [] };
      }
      return new Promise((resolve, reject) => {
        const child = spawn(options.bwrap, bubblewrapArgs(job, command), {
          stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
          detached: true,
        });
        const stdout = capped(options.maxOutputBytes);
        const stderr = capped(options.maxOutputBytes);
        const result = capped(options.maxOutputBytes);
        child.stdout!.on('data', stdout.add);
        child.stderr!.on('data', stderr.add);
        (child.stdio[3] as NodeJS.ReadableStream).on('data', result.add);
        let stopped: 'timeout' | 'cancelled' | undefined;
        // The whole process group: a tool's own children die with it.
        const kill = (why: 'timeout' | 'cancelled') => {
          stopped = why;
          if (child.pid) process.kill(-child.pid, 'SIGKILL');
        };
        const timer = setTimeout(() => kill('timeout'), job.timeoutMs);
        const onAbort = () => kill('cancelled');
        signal?.addEventListener('abort', onAbort);
        child.on('error', (error) => {
          clearTimeout(timer);
          reject(
            new SandboxUnavailableError(
              `cannot start the local sandbox (${options.bwrap}): ${error.message}`,
            ),
          );
        });
        child.on('close', (code) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          const captured = { stdout: lines(stdout.text()), stderr: lines(stderr.text()) };
          if (stopped === 'timeout') {
            const seconds = job.timeoutMs / 1000;
            return resolve({
              ...failure(job, 'TimeoutError', `the tool ran longer than ${seconds} seconds`),
              ...captured,
            });
          }
          if (stopped === 'cancelled')
            return resolve({ ...failure(job, 'CancelledError', 'the run was cancelled'), ...captured });
          try {
            const parsed = JSON.parse(result.text()) as { status: 'success' | 'error'; func_return: unknown };
            resolve({ status: parsed.status, funcReturn: parsed.func_return, ...captured });
          } catch {
            resolve({
              ...failure(job, 'SandboxError', `the tool exited (code ${code}) without a result`),
              ...captured,
            });
          }
        });
        child.stdin!.end(command.input);
      });
    },
  };
}

const lines = (text: string) => (text ? [text] : []);
