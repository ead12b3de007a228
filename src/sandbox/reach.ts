/**
 * What the local sandbox can reach on the host. bubblewrap binds host folders into a sandbox (the
 * runners, the tools' environments) as the user tools run as: when the server is root, that is nobody
 * (bubblewrap.ts), who must be able to enter every folder on the way. A root user's clone lives under
 * /root and `mktemp -d` makes 0700 folders, which nobody cannot enter; what the sandbox reads is then
 * kept where it can (a copy of the runners, the environments in a cache folder of the host's).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NOBODY } from './bubblewrap';

/** The permission bits that let the sandbox's user enter a folder, as owner, group or other. */
function entersAsNobody(stat: fs.Stats): boolean {
  if (stat.uid === NOBODY) return (stat.mode & 0o100) !== 0;
  if (stat.gid === NOBODY) return (stat.mode & 0o010) !== 0;
  return (stat.mode & 0o001) !== 0;
}

/**
 * The first folder on the way to `target` that the sandbox's user cannot enter, if any; never one
 * when the server is not root (bubblewrap then runs as the server's own user). Folders on the way that
 * do not exist yet are made later by the server, readable by others.
 */
export function blockedFolder(target: string): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const absolute = path.resolve(target);
  const parts = absolute.split(path.sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const folder = path.sep + parts.slice(0, i).join(path.sep);
    const stat = fs.statSync(folder, { throwIfNoEntry: false });
    if (!stat) return undefined;
    if (stat.isDirectory() && !entersAsNobody(stat)) return folder;
  }
  return undefined;
}

/** A folder's mode as `ls` shows it in octal, for messages. */
export const modeOf = (folder: string) =>
  `0${(fs.statSync(folder).mode & 0o777).toString(8).padStart(3, '0')}`;

/** Where the host keeps what sandboxes must reach when the server's own folders are closed to them. */
const SHARED_ROOTS = ['/var/cache/letta-temporal', path.join(os.tmpdir(), 'letta-temporal-cache')];

/** The first of SHARED_ROOTS the sandbox's user can reach. */
export function sharedRoot(): string {
  const root = SHARED_ROOTS.find((candidate) => !blockedFolder(candidate));
  if (!root) throw new Error(`the sandbox's user can enter none of ${SHARED_ROOTS.join(', ')}`);
  return root;
}

const digest = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);

/**
 * The default home of the tools' environments: `<DATA_DIR>/sandbox-envs`, or, when the sandbox's user
 * cannot enter DATA_DIR, a folder of this DATA_DIR's own in the host's shared cache. The environments
 * are a cache (built again when missing), so the host's cache folder is their right place too.
 */
export function defaultEnvironmentsDir(dataDir: string): string {
  const inData = path.join(dataDir, 'sandbox-envs');
  if (!blockedFolder(inData)) return inData;
  return path.join(sharedRoot(), `sandbox-envs-${digest(path.resolve(dataDir))}`);
}

/** The files of a folder, by name, with their contents: what a copy of it must hold. */
function filesOf(folder: string): [string, Buffer][] {
  return fs
    .readdirSync(folder, { withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => [entry.name, fs.readFileSync(path.join(folder, entry.name))]);
}

/**
 * `folder` (a flat folder of the server's own files, a runner's) where the sandbox's user can read it:
 * itself when it can, otherwise a copy in the shared cache named by its contents. The copy is made in
 * a temporary folder and renamed into place, so a copy that exists is whole and never changes.
 */
export function reachableFolder(folder: string): string {
  if (!blockedFolder(folder)) return folder;
  const files = filesOf(folder);
  const hash = createHash('sha256');
  for (const [name, content] of files) hash.update(name).update('\0').update(content).update('\0');
  const copy = path.join(sharedRoot(), `files-${hash.digest('hex').slice(0, 16)}`);
  if (fs.existsSync(copy)) return copy;
  fs.mkdirSync(path.dirname(copy), { recursive: true, mode: 0o755 });
  const staging = fs.mkdtempSync(`${copy}.tmp-`);
  for (const [name, content] of files) fs.writeFileSync(path.join(staging, name), content, { mode: 0o644 });
  fs.chmodSync(staging, 0o755);
  try {
    fs.renameSync(staging, copy);
  } catch (error) {
    fs.rmSync(staging, { recursive: true, force: true });
    if (!fs.existsSync(copy)) throw error; // another process renamed its copy first: the same files
  }
  return copy;
}
