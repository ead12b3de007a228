/**
 * Memory and process-count limits through cgroups, where this process may write its cgroup hierarchy
 * (v1 `memory` and `pids` controllers, or the v2 unified one). rlimits cannot cap a tool's memory
 * across its processes, nor its process count while the real uid is root; a cgroup can. Where no
 * hierarchy is writable the limits are skipped (the rlimits still hold), and `describe()` says so.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export interface CgroupLimits {
  memoryBytes: number;
  processes: number;
}

/** One tool call's cgroup: the process is added once spawned; `remove` kills what is left and deletes it. */
export interface ToolCgroup {
  /** Its `cgroup.procs` files: a process joins it by writing its pid to each. */
  procs: string[];
  add(pid: number): void;
  remove(): Promise<void>;
}

interface Controller {
  dir: string;
  files: Record<string, string>;
}

const ROOT = '/sys/fs/cgroup';

/** This process's own cgroup path for a controller (v1) or the unified hierarchy (v2, controller ''). */
function ownCgroup(controller: string): string | undefined {
  const lines = fs.readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n');
  for (const line of lines) {
    const [, controllers, cgroupPath] = line.split(':');
    if (controllers.split(',').includes(controller) || (controller === '' && controllers === ''))
      return cgroupPath;
  }
  return undefined;
}

function writable(dir: string): boolean {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function controllers(limits: CgroupLimits): Controller[] {
  const v1Controllers: { name: string; files: Record<string, string> }[] = [
    { name: 'memory', files: { 'memory.limit_in_bytes': String(limits.memoryBytes) } },
    { name: 'pids', files: { 'pids.max': String(limits.processes) } },
  ];
  const v1 = v1Controllers
    .map(({ name, files }) => ({ dir: path.join(ROOT, name, ownCgroup(name) ?? '/'), files }))
    // A hierarchy's root has no limit files of its own, only its children do: look for cgroup.procs.
    .filter((c) => fs.existsSync(path.join(c.dir, 'cgroup.procs')) && writable(c.dir));
  if (v1.length) return v1;
  const unified = path.join(ROOT, ownCgroup('') ?? '/');
  const enabled = fs.existsSync(path.join(unified, 'cgroup.subtree_control'))
    ? fs.readFileSync(path.join(unified, 'cgroup.subtree_control'), 'utf8')
    : '';
  if (!enabled.includes('memory') || !enabled.includes('pids') || !writable(unified)) return [];
  return [
    {
      dir: unified,
      files: { 'memory.max': String(limits.memoryBytes), 'pids.max': String(limits.processes) },
    },
  ];
}

export interface Cgroups {
  /** Null where no hierarchy is writable. `kind` begins its name, `letta-<kind>-…`. */
  create(kind?: string): ToolCgroup | null;
  describe(): string;
}

export function cgroups(limits: CgroupLimits | null): Cgroups {
  let available: Controller[] = [];
  try {
    available = limits ? controllers(limits) : [];
  } catch {
    available = [];
  }
  return {
    describe: () =>
      available.length
        ? `cgroups at ${available.map((c) => c.dir).join(', ')}`
        : 'no writable cgroup hierarchy (memory and process limits are rlimits only)',
    create(kind = 'tool') {
      if (!available.length) return null;
      const name = `letta-${kind}-${randomBytes(6).toString('hex')}`;
      const dirs = available.map((c) => {
        const dir = path.join(c.dir, name);
        fs.mkdirSync(dir);
        for (const [file, value] of Object.entries(c.files)) fs.writeFileSync(path.join(dir, file), value);
        return dir;
      });
      const procs = dirs.map((dir) => path.join(dir, 'cgroup.procs'));
      return {
        procs,
        add: (pid) => procs.forEach((file) => fs.writeFileSync(file, String(pid))),
        remove: async () => {
          await Promise.all(dirs.map(removeCgroup));
        },
      };
    },
  };
}

/** Kills what is still in the cgroup, then deletes it once it is empty. */
async function removeCgroup(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const pids = fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // already gone
      }
    }
    try {
      fs.rmdirSync(dir);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}
