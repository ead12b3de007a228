/**
 * What the builders of tools' dependency environments (pip venvs, npm node_modules) share: running an
 * installer with a timeout that kills its whole process group, and checking for a finished folder.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { SandboxSettings } from './settings';
import { blockedFolder, defaultEnvironmentsDir, modeOf } from './reach';

/** How much of a process's output is kept for error messages: the end, where installers say what failed. */
const OUTPUT_TAIL_BYTES = 64 * 1024;

/**
 * Where the environments live (SANDBOX_ENV_DIR, else in DATA_DIR where the sandbox can reach it): pip
 * venvs by hash, npm sets as `node-<hash>`.
 */
/** Where tools' environments live: the settings that say it. */
type EnvironmentsPlace = Pick<SandboxSettings, 'SANDBOX_ENV_DIR' | 'dataDir'>;

export const environmentsDir = (config: EnvironmentsPlace) =>
  path.resolve(config.SANDBOX_ENV_DIR ?? defaultEnvironmentsDir(config.dataDir));

export async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

export interface ProcessResult {
  code: number | null;
  /** stdout and stderr interleaved, the last OUTPUT_TAIL_BYTES of them. */
  output: string;
  timedOut: boolean;
}

/**
 * Runs a command in its own process group and kills the whole group at the timeout: installers start
 * children (pip: the target interpreter, build backends) that must not outlive them. Rejects only when the
 * command cannot be started.
 */
export function runProcess(command: string, args: string[], timeoutMs: number): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = Buffer.alloc(0);
    const collect = (chunk: Buffer) => {
      output = Buffer.concat([output, chunk]);
      if (output.length > OUTPUT_TAIL_BYTES) output = output.subarray(output.length - OUTPUT_TAIL_BYTES);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // The group is already gone.
      }
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output: output.toString('utf8'), timedOut });
    });
  });
}

/**
 * Where the tools' environments live, and why there; with `problem` when the sandbox's user cannot
 * reach them (SANDBOX_ENV_DIR behind a folder it cannot enter): every tool with requirements would fail.
 */
export function environmentsReport(config: EnvironmentsPlace): {
  detail: string;
  problem?: string;
  fix?: string;
} {
  const dir = environmentsDir(config);
  const blocked = blockedFolder(dir);
  if (blocked && config.SANDBOX_ENV_DIR)
    return {
      detail: dir,
      problem: `the sandbox's user (nobody) cannot enter ${blocked} (mode ${modeOf(blocked)}), on the way to SANDBOX_ENV_DIR=${dir}: tools with requirements cannot run`,
      fix: `chmod o+x ${blocked}, or set SANDBOX_ENV_DIR to a folder every user can enter (unset, the server chooses one)`,
    };
  const closedData = blockedFolder(config.dataDir);
  if (!config.SANDBOX_ENV_DIR && closedData)
    return {
      detail: `${dir} (the sandbox's user cannot enter ${closedData}, mode ${modeOf(closedData)}, so not in DATA_DIR)`,
    };
  return { detail: dir };
}
