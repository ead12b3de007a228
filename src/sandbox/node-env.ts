/**
 * npm requirements of TypeScript tools: one node_modules folder per set of requirements, installed once
 * (outside the sandbox, with install scripts off, so no package code runs there) and then only read.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { exists, runProcess } from './install-process';
import { ToolEnvironmentError } from './tool-environment-error';
import { SandboxUnavailableError, type NpmRequirement } from './types';

export interface NodeEnvOptions {
  /** Where the installed sets live, as `node-<hash>`. */
  envDir: string;
  npm: string;
  /** The registry to install from; npm's own configuration when unset. */
  registry?: string;
  installTimeoutMs: number;
}

/** Installs in progress in this process, by folder: concurrent calls for one set share one install. */
const installing = new Map<string, Promise<void>>();

const specOf = (r: NpmRequirement) => (r.version ? `${r.name}@${r.version}` : r.name);

function envFolder(specs: string[], options: NodeEnvOptions): string {
  const key = JSON.stringify({ specs, registry: options.registry ?? null });
  return path.join(options.envDir, `node-${createHash('sha256').update(key).digest('hex').slice(0, 32)}`);
}

/** The node_modules folder holding `requirements`, installed on first use. */
export async function nodeModulesFor(
  requirements: NpmRequirement[],
  options: NodeEnvOptions,
): Promise<string> {
  const specs = [...new Set(requirements.map(specOf))].sort();
  const folder = envFolder(specs, options);
  let install = installing.get(folder);
  if (!install) {
    install = ensureInstalled(folder, specs, options).finally(() => installing.delete(folder));
    installing.set(folder, install);
  }
  await install;
  return path.join(folder, 'node_modules');
}

/** Installs into a fresh folder beside the final one and renames it into place: never half a folder. */
async function ensureInstalled(folder: string, specs: string[], options: NodeEnvOptions): Promise<void> {
  if (await exists(folder)) return;
  await fs.mkdir(options.envDir, { recursive: true });
  const staging = await fs.mkdtemp(`${folder}.tmp-`);
  try {
    await npmInstall(staging, specs, options);
    await fs.chmod(staging, 0o755); // mkdtemp's 0700 would hide it from the sandbox's uid
    await fs.rename(staging, folder);
  } catch (error) {
    await fs.rm(staging, { recursive: true, force: true });
    // Another server process installed the same set meanwhile: theirs is as good.
    if (await exists(folder)) return;
    throw error;
  }
}

/** npm's own words for what went wrong: its first `npm error` line that is not a field like `code`. */
function npmErrorLine(output: string): string | undefined {
  return output
    .split('\n')
    .map((line) => line.match(/^npm (?:error|ERR!) (.*)$/)?.[1]?.trim())
    .find((line) => line && !/^(code|syscall|path|errno|A complete log)\b/.test(line));
}

async function npmInstall(prefix: string, specs: string[], options: NodeEnvOptions): Promise<void> {
  const args = [
    'install',
    '--no-save',
    '--no-audit',
    '--no-fund',
    '--ignore-scripts',
    '--no-update-notifier',
  ];
  if (options.registry) args.push('--registry', options.registry);
  // `--` ends the options: a requirement's name cannot pass itself off as one.
  args.push('--prefix', prefix, '--', ...specs);
  const result = await runProcess(options.npm, args, options.installTimeoutMs).catch((error: Error) => {
    throw new SandboxUnavailableError(`cannot run npm (${options.npm}): ${error.message}`);
  });
  if (result.code === 0) return;
  const why = result.timedOut
    ? `timed out after ${options.installTimeoutMs} ms`
    : (npmErrorLine(result.output) ?? `exit code ${result.code}`);
  throw new ToolEnvironmentError(`npm install ${specs.join(' ')} failed: ${why}`);
}
