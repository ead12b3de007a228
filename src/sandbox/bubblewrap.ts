/**
 * The bubblewrap profile custom tools (local.ts) and stdio MCP servers (src/mcp/stdio-sandbox.ts) run
 * in: a read-only view of the host's /usr (with /bin, /lib… as the host lays them out), fresh /proc and
 * /dev, a read-only root, private tmpfs /tmp, /work (the working folder) and /dev/shm, the only places
 * it can write; every namespace unshared (the network too, unless allowed), no capabilities, the nobody
 * uid inside, and only the environment it is given; it dies with its parent.
 */
import fs from 'node:fs';

/** The uid tools run as when the server is root: without root, RLIMIT_NPROC holds and files are safe. */
export const NOBODY = 65534;

/** What name resolution and TLS need, for sandboxes allowed the network. */
export const NETWORK_FILES = [
  '/etc/resolv.conf',
  '/etc/hosts',
  '/etc/nsswitch.conf',
  '/etc/ssl',
  '/etc/ca-certificates',
];

/** The host's system folders, shown read-only where the host has them. */
export const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** The working folder, a private tmpfs as /tmp is. */
export const WORK_DIR = '/work';
/** The only places a sandbox can write: each a tmpfs of its own. */
export const PRIVATE_DIRS = ['/tmp', WORK_DIR, '/dev/shm'];

export interface Command {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
}

export interface BubblewrapProfile {
  bwrap: string;
  /** Size of each private tmpfs. */
  tmpBytes: number;
  /**
   * The whole environment inside. It is the process's own environment, never bwrap's `--setenv`
   * arguments: a command line is readable by every user of the host, and this may hold secrets.
   */
  env: Record<string, string>;
  /** More bwrap options, after the base view's mounts: mounts over it, mostly. */
  extraArgs?: string[];
  network?: boolean;
}

let systemView: string[] | undefined;

/** /usr bound read-only; /bin, /lib… bound where the host has folders, linked where it links them to /usr. */
function systemMounts(): string[] {
  systemView ??= SYSTEM_DIRS.flatMap((dir) => {
    const stat = fs.lstatSync(dir, { throwIfNoEntry: false });
    if (!stat) return [];
    return stat.isSymbolicLink() ? ['--symlink', fs.readlinkSync(dir), dir] : ['--ro-bind', dir, dir];
  });
  return systemView;
}

/** `argv` runs in the sandbox (a bare name is found on the PATH of `profile.env`). */
export function bubblewrapCommand(profile: BubblewrapProfile, argv: string[]): Command {
  const tmpfs = PRIVATE_DIRS.flatMap((dir) => ['--size', String(profile.tmpBytes), '--tmpfs', dir]);
  const networkFiles = profile.network ? NETWORK_FILES.flatMap((file) => ['--ro-bind-try', file, file]) : [];
  const args = [
    ...systemMounts(),
    '--proc', '/proc',
    '--dev', '/dev',
    ...tmpfs,
    ...networkFiles,
    ...(profile.extraArgs ?? []),
    // After every mount: bubblewrap's root and /dev are tmpfs the sandbox could otherwise write to.
    '--remount-ro', '/dev',
    '--remount-ro', '/',
    '--chdir', WORK_DIR,
    '--unshare-all',
    ...(profile.network ? ['--share-net'] : []),
    '--die-with-parent',
    '--new-session',
    '--cap-drop', 'ALL',
    '--uid', String(NOBODY),
    '--gid', String(NOBODY),
    ...argv,
  ]; // prettier-ignore
  return { file: profile.bwrap, args, env: profile.env };
}

/**
 * As root, drop to `uid` (nobody unless told) before anything of the sandbox's runs (setpriv execs, so
 * the pid stays ours).
 */
export function unprivileged(command: Command, uid = NOBODY): Command {
  if (process.getuid?.() !== 0) return command;
  const setpriv = ['--reuid', String(uid), '--regid', String(uid), '--clear-groups', '--'];
  return { ...command, file: 'setpriv', args: [...setpriv, command.file, ...command.args] };
}
