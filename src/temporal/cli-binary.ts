import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger';
import { projectRoot, toolsBinDir } from '../paths';

/** The version scripts/install-temporal.sh installs. */
export const TEMPORAL_CLI_VERSION = '1.5.1';

export interface TemporalBinary {
  path: string;
  /** Which rule found it, for the start-up log. */
  source: 'TEMPORAL_CLI_PATH' | 'PATH' | 'tools folder' | 'installed';
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function findOnPath(name: string, searchPath = process.env.PATH ?? ''): string | undefined {
  return searchPath
    .split(path.delimiter)
    .filter(Boolean)
    .map((dir) => path.join(dir, name))
    .find(isExecutable);
}

export function goAvailable(): boolean {
  return Boolean(findOnPath('go')) || isExecutable('/usr/local/go/bin/go');
}

/**
 * Runs scripts/install-temporal.sh (download, else a build with Go): on a terminal its progress bar and
 * messages go straight to it, otherwise its lines go to the log.
 */
function installCli(log: Logger): Promise<void> {
  const script = path.join(projectRoot, 'scripts', 'install-temporal.sh');
  const onTerminal = Boolean(process.stderr.isTTY);
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script], {
      stdio: ['ignore', onTerminal ? 'inherit' : 'pipe', onTerminal ? 'inherit' : 'pipe'],
    });
    const relay = (chunk: Buffer) =>
      chunk
        .toString()
        .split('\n')
        .filter(Boolean)
        .forEach((line) =>
          log.info(line.startsWith('install-temporal') ? line : `install-temporal: ${line}`),
        );
    child.stdout?.on('data', relay);
    child.stderr?.on('data', relay);
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`scripts/install-temporal.sh exited with ${code}`)),
    );
  });
}

/** The `temporal` CLI already here: TEMPORAL_CLI_PATH, then PATH, then the project's tools folder. */
export function findTemporalBinary(cliPath: string | undefined): TemporalBinary | undefined {
  if (cliPath) {
    if (!isExecutable(cliPath)) throw new Error(`TEMPORAL_CLI_PATH=${cliPath} is not an executable file`);
    return { path: cliPath, source: 'TEMPORAL_CLI_PATH' };
  }
  const onPath = findOnPath('temporal');
  if (onPath) return { path: onPath, source: 'PATH' };
  const inTools = path.join(toolsBinDir, 'temporal');
  if (isExecutable(inTools)) return { path: inTools, source: 'tools folder' };
  return undefined;
}

/**
 * Finds the `temporal` CLI (findTemporalBinary), or installs it into the tools folder
 * (scripts/install-temporal.sh). Undefined when that fails too (offline, and no Go).
 */
export async function resolveTemporalBinary(
  cliPath: string | undefined,
  log: Logger,
): Promise<TemporalBinary | undefined> {
  const found = findTemporalBinary(cliPath);
  if (found) return found;
  log.info('no temporal binary found: getting the Temporal CLI (a download, else a build with Go; once)');
  try {
    await installCli(log);
  } catch (error) {
    log.warn({ error: (error as Error).message }, 'could not download or build the Temporal CLI');
    return undefined;
  }
  return { path: path.join(toolsBinDir, 'temporal'), source: 'installed' };
}
