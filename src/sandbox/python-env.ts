/**
 * Python environments for custom tools' pip requirements: one virtual environment per requirements
 * hash, built once and then shared, read-only, by every tool that asks for the same requirements.
 *
 * The venv is created from the sandbox Python (under /usr, the only system folder the sandbox sees)
 * without pip, which makes creation take milliseconds, and the packages are installed into it by an
 * outer pip through `pip --python <venv>/bin/python`. It is built in a temporary folder and renamed
 * into place, so a venv folder that exists is complete. A lock folder per hash keeps processes that
 * share the folder from building the same venv twice; the rename is what keeps them correct even
 * when that lock is wrongly broken.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxSettings } from './settings';
import { environmentsDir, exists, runProcess } from './install-process';
import { ToolEnvironmentError } from './tool-environment-error';
import { SandboxUnavailableError, type PipRequirement } from './types';

export interface PythonEnvironment {
  /** The venv's folder. */
  root: string;
  /** The venv's interpreter: a symlink that resolves to the sandbox Python. */
  python: string;
}

export interface PythonEnvOptions {
  /** Where the venvs live, one folder per requirements hash. */
  root: string;
  /** The sandbox Python, which every venv is created from. */
  python: string;
  /** The Python whose pip installs the packages; unset: the first of /usr/bin/python3 and `python3` that has one. */
  pipPython?: string;
  indexUrl?: string;
  /** Folders or URLs of distributions, looked in besides the index. */
  findLinks: string[];
  /** No index at all: `findLinks` alone (offline installs). */
  noIndex?: boolean;
  installTimeoutMs: number;
  /** How long a venv may go unused before collectPythonEnvs removes it. */
  maxAgeMs: number;
}

export function pythonEnvOptions(config: SandboxSettings): PythonEnvOptions {
  return {
    root: environmentsDir(config),
    python: config.SANDBOX_PYTHON,
    pipPython: config.SANDBOX_PIP_PYTHON,
    indexUrl: config.PIP_INDEX_URL,
    noIndex: config.PIP_NO_INDEX,
    findLinks: (config.PIP_FIND_LINKS ?? '')
      .split(',')
      .map((link) => link.trim())
      .filter(Boolean),
    installTimeoutMs: config.PIP_INSTALL_TIMEOUT_MS,
    maxAgeMs: config.SANDBOX_ENV_MAX_AGE_MS,
  };
}

/** Written in every venv and touched on every use; its mtime is what collection goes by. */
const USED_MARKER = 'last-used';
/** A venv, its lock, or the temporary folder of a build or a removal. */
const HASH_PREFIX = /^([0-9a-f]{64})(\.lock|\.tmp-.+)?$/;
const LOCK_POLL_MS = 100;
/**
 * A lock older than the install timeout plus this is stale: a build holds its lock only a little
 * longer than pip may run (creating the venv, renaming it).
 */
const LOCK_GRACE_MS = 60_000;
const PROBE_TIMEOUT_MS = 30_000;

/** Builds in flight in this process, by venv folder, so that concurrent callers share one build. */
const building = new Map<string, Promise<PythonEnvironment>>();

/**
 * The venv for `requirements`, built on first use; null when there are none, as the tool then runs
 * on the sandbox Python itself.
 */
export async function pythonEnvironment(
  requirements: readonly PipRequirement[],
  options: PythonEnvOptions,
): Promise<PythonEnvironment | null> {
  if (requirements.length === 0) return null;
  const specs = requirementSpecs(requirements);
  const dir = path.join(options.root, await environmentKey(specs, options));
  let pending = building.get(dir);
  if (!pending) {
    pending = ensureEnvironment(dir, specs, options).finally(() => building.delete(dir));
    building.set(dir, pending);
  }
  return pending;
}

const NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const EXTRAS = /^\[\s*[A-Za-z0-9._-]+(\s*,\s*[A-Za-z0-9._-]+)*\s*\]$/;
const VERSION = /^[A-Za-z0-9.*+!_-]+$/;

/**
 * Sorted, deduplicated `name==version` (or `name`) specs, as Letta writes them. Names and versions
 * come from tool definitions and become pip arguments, so anything that is not a plain name or
 * version (an option such as `--index-url=…`, a URL, a path) is refused.
 */
export function requirementSpecs(requirements: readonly PipRequirement[]): string[] {
  const specs = requirements.map(({ name, version }) => {
    const [, base = '', extras = ''] = /^([^[]*)(.*)$/.exec(name.trim()) ?? [];
    const pinned = version?.trim();
    if (!NAME.test(base) || (extras && !EXTRAS.test(extras)) || (pinned && !VERSION.test(pinned))) {
      throw new ToolEnvironmentError(`invalid pip requirement: ${JSON.stringify({ name, version })}`);
    }
    const spec = normalizeName(base) + normalizeExtras(extras);
    return pinned ? `${spec}==${pinned}` : spec;
  });
  return [...new Set(specs)].sort();
}

/** PEP 503: case and runs of `-`, `_` and `.` do not distinguish projects. */
const normalizeName = (name: string) => name.toLowerCase().replace(/[-_.]+/g, '-');

const normalizeExtras = (extras: string) =>
  extras
    ? `[${extras
        .slice(1, -1)
        .split(',')
        .map((extra) => normalizeName(extra.trim()))
        .sort()
        .join(',')}]`
    : '';

/** Everything that decides what ends up in the venv: the interpreter, the specs, where pip looks. */
async function environmentKey(specs: string[], options: PythonEnvOptions): Promise<string> {
  const { executable, version } = await pythonIdentity(options.python);
  const key = JSON.stringify({
    python: executable,
    version,
    specs,
    indexUrl: options.noIndex ? null : (options.indexUrl ?? null),
    findLinks: options.findLinks,
  });
  return createHash('sha256').update(key).digest('hex');
}

const identities = new Map<string, Promise<{ executable: string; version: string }>>();

/** The interpreter's absolute path and full version, asked once per process. */
function pythonIdentity(python: string): Promise<{ executable: string; version: string }> {
  let identity = identities.get(python);
  if (!identity) {
    identity = askPythonIdentity(python);
    identities.set(python, identity);
    // A failure is not remembered: the next call asks again.
    identity.catch(() => identities.delete(python));
  }
  return identity;
}

async function askPythonIdentity(python: string) {
  const script = 'import sys; print(sys.executable); print(sys.version)';
  const result = await runProcess(python, ['-I', '-c', script], PROBE_TIMEOUT_MS).catch((error: Error) => {
    throw new SandboxUnavailableError(`cannot run the sandbox Python (${python}): ${error.message}`);
  });
  const [executable, ...version] = result.output.trim().split('\n');
  if (result.code !== 0 || !executable) {
    throw new SandboxUnavailableError(`the sandbox Python (${python}) failed: ${lastLine(result.output)}`);
  }
  return { executable, version: version.join('\n') };
}

/** Waits for the venv to exist or for its lock, and builds it under the lock if nobody has. */
async function ensureEnvironment(
  dir: string,
  specs: string[],
  options: PythonEnvOptions,
): Promise<PythonEnvironment> {
  await fs.mkdir(options.root, { recursive: true });
  for (;;) {
    if (await exists(dir)) return use(dir);
    const release = await takeLock(dir, options.installTimeoutMs + LOCK_GRACE_MS);
    if (release) {
      try {
        if (!(await exists(dir))) await build(dir, specs, options);
        return await use(dir);
      } finally {
        await release();
      }
    }
    await sleep(LOCK_POLL_MS);
  }
}

async function use(dir: string): Promise<PythonEnvironment> {
  await markUsed(dir);
  return { root: dir, python: path.join(dir, 'bin', 'python') };
}

async function markUsed(dir: string): Promise<void> {
  const marker = path.join(dir, USED_MARKER);
  const now = new Date();
  try {
    await fs.utimes(marker, now, now);
  } catch (error) {
    if (!isCode(error, 'ENOENT')) throw error;
    await fs.writeFile(marker, '');
  }
}

/** Creates the venv and installs into it in a temporary folder, then renames it into place. */
async function build(dir: string, specs: string[], options: PythonEnvOptions): Promise<void> {
  const tmp = `${dir}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await createVenv(tmp, options.python);
    await pipInstall(path.join(tmp, 'bin', 'python'), specs, options);
    await fs.writeFile(path.join(tmp, USED_MARKER), '');
    await fs.rename(tmp, dir);
  } catch (error) {
    await fs.rm(tmp, { recursive: true, force: true });
    // Another process finished the same venv first (its lock was taken for stale): use theirs.
    if (isCode(error, 'ENOTEMPTY') || isCode(error, 'EEXIST')) return;
    throw error;
  }
}

/** Without pip: 0.03 s instead of 2.5 s, and pip would be dead weight in a read-only venv. */
async function createVenv(dir: string, python: string): Promise<void> {
  const result = await runProcess(python, ['-m', 'venv', '--without-pip', dir], PROBE_TIMEOUT_MS).catch(
    (error: Error) => {
      throw new SandboxUnavailableError(`cannot run the sandbox Python (${python}): ${error.message}`);
    },
  );
  if (result.code !== 0) {
    throw new SandboxUnavailableError(`cannot create a venv with ${python}: ${lastLine(result.output)}`);
  }
}

async function pipInstall(venvPython: string, specs: string[], options: PythonEnvOptions): Promise<void> {
  const pip = await resolvePipPython(options);
  const args = [
    '-m', 'pip',
    // No pip configuration or PIP_* variables of the server's user: only what is configured here.
    '--isolated',
    '--disable-pip-version-check',
    // A general option, so before the subcommand.
    '--python', venvPython,
    'install',
    '--no-input',
    ...indexArgs(options),
    ...specs,
  ]; // prettier-ignore
  const result = await runProcess(pip, args, options.installTimeoutMs).catch((error: Error) => {
    throw new SandboxUnavailableError(`cannot run pip (${pip}): ${error.message}`);
  });
  const what = specs.join(' ');
  if (result.timedOut) {
    throw new ToolEnvironmentError(
      `installing ${what} took longer than ${options.installTimeoutMs / 1000} seconds`,
    );
  }
  if (result.code !== 0) throw new ToolEnvironmentError(`cannot install ${what}: ${pipError(result.output)}`);
}

/** The index (PyPI unless told) and the find-links, as pip's own options mean them. */
function indexArgs({ indexUrl, findLinks, noIndex }: PythonEnvOptions): string[] {
  const index = noIndex ? ['--no-index'] : indexUrl ? ['--index-url', indexUrl] : [];
  return [...index, ...findLinks.flatMap((link) => ['--find-links', link])];
}

/** pip's last `ERROR:` line says what failed; the lines after it are hints and notices. */
function pipError(output: string): string {
  const lines = output
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  return [...lines].reverse().find((line) => /^error:/i.test(line)) ?? lastLine(output);
}

const lastLine = (output: string) => output.trim().split('\n').pop() || 'no output';

let probedPipPython: Promise<string> | undefined;

/** The Python that runs pip: the configured one, or the first candidate whose pip can `--python`. */
export function resolvePipPython(options: Pick<PythonEnvOptions, 'pipPython'>): Promise<string> {
  if (options.pipPython) return Promise.resolve(options.pipPython);
  if (!probedPipPython) {
    probedPipPython = findPipPython();
    probedPipPython.catch(() => (probedPipPython = undefined));
  }
  return probedPipPython;
}

/** Debian's Python may come without pip (python3-pip is a separate package). */
const PIP_CANDIDATES = ['/usr/bin/python3', 'python3'];

async function findPipPython(): Promise<string> {
  for (const python of PIP_CANDIDATES) {
    if (await hasPipWithPythonOption(python)) return python;
  }
  throw new SandboxUnavailableError(
    `none of ${PIP_CANDIDATES.join(', ')} has pip 22.3 or later; set SANDBOX_PIP_PYTHON`,
  );
}

/** `pip --python` appeared in pip 22.3. */
async function hasPipWithPythonOption(python: string): Promise<boolean> {
  try {
    const result = await runProcess(python, ['-m', 'pip', '--version'], PROBE_TIMEOUT_MS);
    const [, major = 0, minor = 0] = /^pip (\d+)\.(\d+)/.exec(result.output)?.map(Number) ?? [];
    return result.code === 0 && (major > 22 || (major === 22 && minor >= 3));
  } catch {
    return false;
  }
}

/**
 * Takes the per-venv lock (a folder: mkdir is atomic), breaking it if its owner is gone or it is older
 * than `staleAfterMs`. Returns its release, or undefined when someone else holds it.
 */
async function takeLock(dir: string, staleAfterMs: number): Promise<(() => Promise<void>) | undefined> {
  const lock = `${dir}.lock`;
  if (!(await makeDir(lock))) {
    if (!(await lockIsStale(lock, staleAfterMs))) return undefined;
    await fs.rm(lock, { recursive: true, force: true });
    if (!(await makeDir(lock))) return undefined;
  }
  await fs.writeFile(path.join(lock, 'owner'), JSON.stringify({ pid: process.pid, host: os.hostname() }));
  return () => fs.rm(lock, { recursive: true, force: true });
}

async function makeDir(dir: string): Promise<boolean> {
  try {
    await fs.mkdir(dir);
    return true;
  } catch (error) {
    if (isCode(error, 'EEXIST')) return false;
    throw error;
  }
}

/** A dead owner only counts on the same host: other hosts' pids mean nothing here. */
async function lockIsStale(lock: string, staleAfterMs: number): Promise<boolean> {
  try {
    const { mtimeMs } = await fs.stat(lock);
    const owner = await readOwner(lock);
    if (owner?.host === os.hostname() && !processAlive(owner.pid)) return true;
    return Date.now() - mtimeMs > staleAfterMs;
  } catch (error) {
    // Released meanwhile: there is nothing to wait for.
    if (isCode(error, 'ENOENT')) return true;
    throw error;
  }
}

/** Undefined while the owner has not written it yet (the lock was just taken). */
async function readOwner(lock: string): Promise<{ pid: number; host: string } | undefined> {
  try {
    return JSON.parse(await fs.readFile(path.join(lock, 'owner'), 'utf8')) as { pid: number; host: string };
  } catch {
    return undefined;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return isCode(error, 'EPERM');
  }
}

/**
 * Removes the venvs under `options.root` unused for longer than `options.maxAgeMs`, and what crashed
 * builds left behind. Each hash is handled under its lock, so venvs being built (or being removed by
 * another process) are skipped. Returns the folders of the venvs removed.
 */
export async function collectPythonEnvs(
  options: Pick<PythonEnvOptions, 'root' | 'maxAgeMs' | 'installTimeoutMs'>,
): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(options.root);
  } catch (error) {
    if (isCode(error, 'ENOENT')) return [];
    throw error;
  }
  const cutoff = Date.now() - options.maxAgeMs;
  const removed: string[] = [];
  const hashes = names.map((name) => HASH_PREFIX.exec(name)?.[1]).filter((hash) => hash !== undefined);
  for (const hash of new Set(hashes)) {
    const dir = path.join(options.root, hash);
    const release = await takeLock(dir, options.installTimeoutMs + LOCK_GRACE_MS);
    if (!release) continue;
    try {
      // Builds put their temporary folder under the lock and remove it before releasing it.
      const leftovers = names.filter((name) => name.startsWith(`${hash}.tmp-`));
      for (const name of leftovers)
        await fs.rm(path.join(options.root, name), { recursive: true, force: true });
      if ((await exists(dir)) && (await lastUsed(dir)) < cutoff) {
        await remove(dir);
        removed.push(dir);
      }
    } finally {
      await release();
    }
  }
  return removed;
}

/** Renamed away first, so that nobody sees a half-removed venv. */
async function remove(dir: string): Promise<void> {
  const doomed = `${dir}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  await fs.rename(dir, doomed);
  await fs.rm(doomed, { recursive: true, force: true });
}

async function lastUsed(dir: string): Promise<number> {
  try {
    return (await fs.stat(path.join(dir, USED_MARKER))).mtimeMs;
  } catch (error) {
    if (!isCode(error, 'ENOENT')) throw error;
    return (await fs.stat(dir)).mtimeMs;
  }
}

const isCode = (error: unknown, code: string) => (error as NodeJS.ErrnoException | undefined)?.code === code;
