import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger';
import { projectRoot, toolsBinDir } from '../paths';

export interface TemporalBinary {
  path: string;
  /** Which rule found it, for the start-up log. */
  source: 'TEMPORAL_CLI_PATH' | 'PATH' | 'tools folder' | 'built with Go';
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

function goAvailable(): boolean {
  return Boolean(findOnPath('go')) || isExecutable('/usr/local/go/bin/go');
}

/** Runs scripts/install-temporal.sh, relaying its output to the log line by line. */
function buildWithGo(log: Logger): Promise<void> {
  const script = path.join(projectRoot, 'scripts', 'install-temporal.sh');
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script], { stdio: ['ignore', 'pipe', 'pipe'] });
    const relay = (chunk: Buffer) =>
      chunk
        .toString()
        .split('\n')
        .filter(Boolean)
        .forEach((line) => log.info(`install-temporal: ${line}`));
    child.stdout.on('data', relay);
    child.stderr.on('data', relay);
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`scripts/install-temporal.sh exited with ${code}`)),
    );
  });
}

/**
 * Finds the `temporal` CLI: TEMPORAL_CLI_PATH, then PATH, then the project's tools folder, then a
 * fresh `go install` into that folder. Undefined when none of those can give one (no Go either).
 */
export async function resolveTemporalBinary(
  cliPath: string | undefined,
  log: Logger,
): Promise<TemporalBinary | undefined> {
  if (cliPath) {
    if (!isExecutable(cliPath)) throw new Error(`TEMPORAL_CLI_PATH=${cliPath} is not an executable file`);
    return { path: cliPath, source: 'TEMPORAL_CLI_PATH' };
  }
  const onPath = findOnPath('temporal');
  if (onPath) return { path: onPath, source: 'PATH' };
  const inTools = path.join(toolsBinDir, 'temporal');
  if (isExecutable(inTools)) return { path: inTools, source: 'tools folder' };
  if (!goAvailable()) return undefined;
  log.info('no temporal binary found: building the Temporal CLI with Go (a few minutes, once)');
  await buildWithGo(log);
  return { path: inTools, source: 'built with Go' };
}
