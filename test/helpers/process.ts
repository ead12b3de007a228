import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../../src/paths';

export interface StartedProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts a command in the project folder (or `cwd`) in its own process group, as a terminal would. */
export function startProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
  cwd = projectRoot,
): StartedProcess {
  const child = spawn(command, args, {
    cwd,
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

/** Pids of every process whose command line mentions `marker` (a unique temp folder, say). */
export function processesMentioning(marker: string): number[] {
  return fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    })
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

/** Running, not a zombie waiting for a parent to reap it. */
export function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Pids of every live descendant of `pid` (children, their children, ...). */
export function descendantsOf(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      // Field 4 of /proc/<pid>/stat is the parent; the command name before it may hold spaces.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  for (let frontier = [pid]; frontier.length;) {
    frontier = [...parents].filter(([, parent]) => frontier.includes(parent)).map(([child]) => child);
    found.push(...frontier);
  }
  return found;
}
