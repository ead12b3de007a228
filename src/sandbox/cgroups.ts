/**
 * Memory and process-count limits through cgroups, where this process may write its cgroup hierarchy
 * (v1 `memory` and `pids` controllers, or the v2 unified one). rlimits cannot cap a tool's memory
 * across its processes (tmpfs pages included), nor its process count while the real uid is root; a
 * cgroup can, and its counters tell when a limit was hit. Where no hierarchy is writable the limits are
 * skipped (the rlimits still hold), and `describe()` says so.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export interface CgroupLimits {
  memoryBytes: number;
  processes: number;
}

/** How often the cgroup's limits were hit so far: a process killed for memory, a fork refused. */
export interface LimitHits {
  memory: number;
  processes: number;
}

/** A program and its arguments. */
export interface Program {
  file: string;
  args: string[];
}

/**
 * One sandbox's cgroup: `join` makes a program enter it before it runs; `hits` reads its counters;
 * `remove` kills what is left and deletes it.
 */
export interface ToolCgroup {
  join<P extends Program>(program: P): P;
  hits(): LimitHits;
  remove(): Promise<void>;
}

/**
 * Writes its own pid to each cgroup.procs given before `--`, then becomes the program after it. Adding
 * the pid once spawned would come too late: bubblewrap forks the sandbox's processes at once, and they
 * would stay outside.
 */
const JOIN_THEN_EXEC = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';

/** A counter of a limit file: the line `key N` of `file`. */
interface Counter {
  file: string;
  key: string;
  counts: keyof LimitHits;
}

interface Controller {
  dir: string;
  files: Record<string, string>;
  counters: Counter[];
}

const OOM_KILLS_V1: Counter = { file: 'memory.oom_control', key: 'oom_kill', counts: 'memory' };
const OOM_KILLS_V2: Counter = { file: 'memory.events', key: 'oom_kill', counts: 'memory' };
const FORKS_REFUSED: Counter = { file: 'pids.events', key: 'max', counts: 'processes' };

function readCounter(dir: string, { file, key }: Counter): number {
  try {
    const line = fs
      .readFileSync(path.join(dir, file), 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${key} `));
    return Number(line?.split(' ')[1] ?? 0);
  } catch {
    return 0; // an older kernel without the counter
  }
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
  const v1Controllers: { name: string; files: Record<string, string>; counters: Counter[] }[] = [
    {
      name: 'memory',
      files: { 'memory.limit_in_bytes': String(limits.memoryBytes) },
      counters: [OOM_KILLS_V1],
    },
    { name: 'pids', files: { 'pids.max': String(limits.processes) }, counters: [FORKS_REFUSED] },
  ];
  const v1 = v1Controllers
    .map(({ name, ...rest }) => ({ dir: path.join(ROOT, name, ownCgroup(name) ?? '/'), ...rest }))
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
      counters: [OOM_KILLS_V2, FORKS_REFUSED],
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
      const created = available.map((c) => {
        const dir = path.join(c.dir, name);
        fs.mkdirSync(dir);
        for (const [file, value] of Object.entries(c.files)) fs.writeFileSync(path.join(dir, file), value);
        return { dir, counters: c.counters };
      });
      const procs = created.map((c) => path.join(c.dir, 'cgroup.procs'));
      return {
        join: (program) => ({
          ...program,
          file: '/bin/sh',
          args: ['-c', JOIN_THEN_EXEC, 'sh', ...procs, '--', program.file, ...program.args],
        }),
        hits() {
          const hits: LimitHits = { memory: 0, processes: 0 };
          for (const { dir, counters } of created)
            for (const counter of counters) hits[counter.counts] += readCounter(dir, counter);
          return hits;
        },
        remove: async () => {
          await Promise.all(created.map((c) => removeCgroup(c.dir)));
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
