import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../../src/paths';

export interface StartedProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts a command in the project folder in its own process group, as a terminal would. */
export function startProcess(command: string, args: string[], env: Record<string, string>): StartedProcess {
  const child = spawn(command, args, {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Polls `url` until it answers `status`, or fails with the process output after `timeoutMs`. */
export async function waitForStatus(url: string, status: number, proc: StartedProcess, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) throw new Error(`process exited early:\n${proc.output()}`);
    try {
      const res = await fetch(url);
      if (res.status === status) return res;
      last = `HTTP ${res.status}`;
    } catch (error) {
      last = String(error);
    }
    await sleep(250);
  }
  throw new Error(`${url} did not answer ${status} within ${timeoutMs} ms (${last}):\n${proc.output()}`);
}

/** Pids of every process whose command line (or, asked, environment) mentions `marker` (a unique id, say). */
export function processesMentioning(marker: string, options: { environment?: boolean } = {}): number[] {
  const files = options.environment ? ['cmdline', 'environ'] : ['cmdline'];
  const mentions = (pid: string, file: string) => {
    try {
      return fs.readFileSync(`/proc/${pid}/${file}`, 'utf8').includes(marker);
    } catch {
      return false;
    }
  };
  return fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
    .filter((pid) => files.some((file) => mentions(pid, file)))
    .map(Number);
}

/** Pids of the processes still in process group `pgid`. */
export function processesInGroup(pgid: number): number[] {
  return fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        // Field 5 of /proc/<pid>/stat is the process group; the command name before it may hold spaces.
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) === pgid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
