/**
 * What the builders of tools' dependency environments (pip venvs, npm node_modules) share: running an
 * installer with a timeout that kills its whole process group, and checking for a finished folder.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config';

/** How much of a process's output is kept for error messages: the end, where installers say what failed. */
const OUTPUT_TAIL_BYTES = 64 * 1024;

/** Where the environments live (SANDBOX_ENV_DIR): pip venvs by hash, npm sets as `node-<hash>`. */
export const environmentsDir = (config: Config) =>
  path.resolve(config.SANDBOX_ENV_DIR ?? path.join(config.dataDir, 'sandbox-envs'));

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
