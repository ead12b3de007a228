/**
 * Where a stdio MCP server's command runs (MCP_STDIO). `sandboxed`, the default: in bubblewrap as custom
 * tools are (src/sandbox/bubblewrap.ts: own PID namespace, no capabilities, a non-root uid), but with the
 * network and a view of the host made for servers: the host's system folders and the files of /etc
 * programs need, the node this server runs on, the project's node_modules and MCP_STDIO_READ_ONLY_PATHS,
 * all read-only. The rest of the project is not shown, nor DATA_DIR and the tool environments, ever,
 * even below a path shown. HOME and the working folder are the private tmpfs /work (where `npx -y`
 * caches what it downloads: again on every connection), /tmp is private too, and what the server
 * writes there goes with it. Its memory and processes are capped by a cgroup of its own where the
 * hierarchy is writable, by rlimits elsewhere. `off` refuses stdio servers; `host` runs them as this
 * server's user, unconfined: the operator's explicit choice, warned about at start-up.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_INHERITED_ENV_VARS, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { SandboxSettings } from '../sandbox/settings';
import type { McpSettings } from './settings';
import { projectRoot } from '../paths';
import {
  bubblewrapCommand,
  NETWORK_FILES,
  PRIVATE_DIRS,
  SYSTEM_DIRS,
  unprivileged,
  WORK_DIR,
  type Command,
} from '../sandbox/bubblewrap';
import { cgroups, type ToolCgroup } from '../sandbox/cgroups';
import { environmentsDir } from '../sandbox/install-process';
import type { McpServerConfig } from '../schemas/mcp-server';

type StdioConfig = Extract<McpServerConfig, { mcp_server_type: 'stdio' }>;

export type McpStdioMode = McpSettings['MCP_STDIO'];

/**
 * A stdio server sees only the environment its config gives it, plus this PATH to find its command
 * unless the config sets one. The host's programs it starts through (sh, prlimit, setpriv, bwrap) are
 * found on it too.
 */
const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin';

/**
 * The host uid stdio servers run as when this server is root. Not nobody, which custom tools run as:
 * RLIMIT_NPROC counts every process of a uid, and the tools' limit would count the servers' threads.
 */
const MCP_UID = 65533;

/** What programs read in /etc besides NETWORK_FILES: user names, Debian's alternatives, the time zone. */
const ETC_FILES = [
  '/etc/passwd',
  '/etc/group',
  '/etc/alternatives',
  '/etc/ld.so.cache',
  '/etc/localtime',
  '/etc/timezone',
];

const PROBE_TIMEOUT_MS = 15_000;

export interface McpStdioOptions {
  mode: McpStdioMode;
  bwrap: string;
  /** Size of each private tmpfs, /tmp and /work. */
  tmpBytes: number;
  memoryBytes: number;
  maxProcesses: number;
  /**
   * The longest message a server may send (a tool's whole result is one): the SDK's own limit is 10
   * MiB, past which it drops the connection. A result is cut at its tool's return_char_limit after.
   */
  maxMessageBytes: number;
  /** More host paths to show, read-only. */
  readOnlyPaths: string[];
  /** Host paths never shown, even below a path that is: DATA_DIR, the tool environments. */
  hiddenPaths: string[];
}

export function mcpStdioOptions(
  config: McpSettings & Pick<SandboxSettings, 'SANDBOX_BWRAP_PATH' | 'SANDBOX_ENV_DIR' | 'dataDir'>,
): McpStdioOptions {
  return {
    mode: config.MCP_STDIO,
    bwrap: config.SANDBOX_BWRAP_PATH,
    tmpBytes: config.MCP_STDIO_TMP_BYTES,
    memoryBytes: config.MCP_STDIO_MEMORY_BYTES,
    maxProcesses: config.MCP_STDIO_MAX_PROCESSES,
    maxMessageBytes: config.MCP_STDIO_MAX_MESSAGE_BYTES,
    readOnlyPaths: config.MCP_STDIO_READ_ONLY_PATHS ?? [],
    hiddenPaths: [config.dataDir, environmentsDir(config)],
  };
}

/** A stdio server this server will not start (MCP_STDIO=off, a command the sandbox cannot see...). */
export class McpStdioRefusedError extends Error {
  override name = 'McpStdioRefusedError';
}

export interface McpStdioLauncher {
  mode: McpStdioMode;
  describe(): string;
  /** Null when stdio servers run as configured; otherwise why they cannot (the sandbox probe, run once). */
  problem(): Promise<string | null>;
  /** Throws McpStdioRefusedError when the server may not run here; starts nothing. */
  check(config: StdioConfig): Promise<void>;
  /** The transport that starts the server; throws McpStdioRefusedError when it may not run. */
  transport(config: StdioConfig): Promise<StdioClientTransport>;
}

const within = (file: string, dir: string) =>
  file === dir || file.startsWith(dir.endsWith('/') ? dir : `${dir}/`);

const executable = (file: string) => {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
};

/**
 * The sandbox's view of the host, layer over layer as bwrap mounts them (after the base profile's
 * system folders and private tmpfs): the last layer holding a path says whether the host's file is
 * what the sandbox sees there.
 */
class View {
  private readonly layers = [
    ...SYSTEM_DIRS.map((dir) => ({ dir, shown: true })),
    ...PRIVATE_DIRS.map((dir) => ({ dir, shown: false })),
    ...NETWORK_FILES.map((dir) => ({ dir, shown: true })),
  ];
  private readonly mounts: string[] = [];
  /** The hiding folders, made read-only once bwrap has made every mount point (the root follows). */
  private readonly remounts: string[] = [];

  get args(): string[] {
    return [...this.mounts, ...this.remounts];
  }

  shows(file: string): boolean {
    const holding = this.layers.filter((layer) => within(file, layer.dir));
    return holding.at(-1)?.shown ?? false;
  }

  /** Whether `dir` is a folder on the way to something shown (/, /etc): the sandbox has it too. */
  leadsToShown(dir: string): boolean {
    return this.layers.some((layer) => layer.shown && within(layer.dir, dir));
  }

  /** `source` (a host path) read-only at `dir`, if it exists. */
  show(dir: string, source = dir): void {
    if (!fs.existsSync(source)) return;
    this.mounts.push('--ro-bind', source, dir);
    this.layers.push({ dir, shown: true });
  }

  /** An empty read-only folder over `dir` (by its name and by where it leads) wherever it is shown. */
  hide(dir: string): void {
    if (!fs.existsSync(dir)) return;
    for (const name of new Set([dir, fs.realpathSync(dir)])) {
      const shownBelow = this.layers.some(
        (layer) => layer.shown && layer.dir !== name && within(layer.dir, name),
      );
      if (!this.shows(name) && !shownBelow) continue;
      this.mounts.push('--tmpfs', name);
      this.remounts.push('--remount-ro', name);
      this.layers.push({ dir: name, shown: false });
    }
  }
}

function viewFor(options: McpStdioOptions): View {
  const view = new View();
  ETC_FILES.forEach((file) => view.show(file));
  view.hide(projectRoot);
  // The node this server runs on, with npm and npx beside it (already shown when under /usr).
  if (!view.shows(process.execPath)) view.show(path.dirname(path.dirname(process.execPath)));
  const nodeModules = path.join(projectRoot, 'node_modules');
  if (fs.existsSync(nodeModules)) view.show(nodeModules, fs.realpathSync(nodeModules));
  options.readOnlyPaths.forEach((dir) => view.show(dir));
  options.hiddenPaths.forEach((dir) => view.hide(dir));
  return view;
}

const ALLOW_MORE =
  "The MCP sandbox shows the host's system folders, the node this server runs on and its node_modules, read-only: MCP_STDIO_READ_ONLY_PATHS shows more host folders";

/**
 * A bare `python` runs `python3` where the PATH has no `python`: Letta's image has both names, Debian
 * only the second (its python-is-python3 adds the first), and MCP configs written for Letta say
 * `python -m …`.
 */
export function pythonAlias(command: string, searchPath: string): string {
  if (command !== 'python') return command;
  return !onPath('python', searchPath) && onPath('python3', searchPath) ? 'python3' : command;
}

/** The executable file a bare name runs on `searchPath` (its absolute folders), of those `shown`. */
function onPath(name: string, searchPath: string, shown = (_file: string) => true): string | undefined {
  return searchPath
    .split(':')
    .filter((dir) => path.isAbsolute(dir))
    .map((dir) => path.join(dir, name))
    .find((file) => shown(file) && executable(file));
}

/** The command's file in the sandbox: a bare name is looked up on the PATH the server is given. */
function commandFile(command: string, searchPath: string, view: View): string {
  if (!command.includes('/')) {
    const found = onPath(command, searchPath, (file) => view.shows(file));
    if (found) return found;
    throw new McpStdioRefusedError(
      `the command ${command} is not found on the MCP sandbox's PATH (${searchPath}). ${ALLOW_MORE}`,
    );
  }
  if (!path.isAbsolute(command))
    throw new McpStdioRefusedError(`the command ${command} is a relative path: give an absolute one`);
  if (!view.shows(path.normalize(command)))
    throw new McpStdioRefusedError(`the command ${command} is not visible in the MCP sandbox. ${ALLOW_MORE}`);
  if (!executable(command))
    throw new McpStdioRefusedError(`the command ${command} does not exist or is not executable`);
  return command;
}

/** bubblewrap's own /proc and /dev (its tmpfs /dev/shm aside): what is there is the sandbox's. */
const KERNEL_DIRS = ['/proc', '/dev'];

/**
 * Refuses an argument naming a host file the server could not open (node's "Cannot find module"
 * otherwise): an absolute path the sandbox does not show, or one that exists nowhere. Other arguments
 * (flags, URLs, values) pass, and so do relative paths, which lead into the private working folder. A
 * path in a private tmpfs passes, as the server may make it there itself, unless the host has a file
 * there, which the server never sees.
 */
function checkArgument(arg: string, view: View): void {
  if (!path.isAbsolute(arg)) return;
  const file = path.normalize(arg);
  const onHost = fs.existsSync(file);
  const hidden = () =>
    new McpStdioRefusedError(`the argument ${arg} is not visible in the MCP sandbox. ${ALLOW_MORE}`);
  const missing = () => new McpStdioRefusedError(`the argument ${arg} does not exist`);
  if (view.shows(file)) {
    if (!onHost) throw missing();
    return;
  }
  if (view.leadsToShown(file) || PRIVATE_DIRS.includes(file)) return;
  if (PRIVATE_DIRS.some((dir) => within(file, dir))) {
    if (onHost) throw hidden();
    return;
  }
  if (KERNEL_DIRS.some((dir) => within(file, dir))) return;
  throw onHost ? hidden() : missing();
}

/** Throws McpStdioRefusedError for a command, or a file in its arguments, the sandbox does not show. */
function sandboxed(
  options: McpStdioOptions,
  command: string,
  args: string[],
  env: Record<string, string>,
): Command {
  const view = viewFor(options);
  const file = commandFile(pythonAlias(command, env.PATH), env.PATH, view);
  args.forEach((arg) => checkArgument(arg, view));
  // The SDK adds some of this server's own variables (HOME, USER...) to the environment it spawns
  // with: none is the server's to see. (bwrap sets PWD, to its --chdir.)
  const unset = DEFAULT_INHERITED_ENV_VARS.filter((key) => !(key in env)).flatMap((key) => [
    '--unsetenv',
    key,
  ]);
  // Its PATH is set by bwrap: sh, setpriv and bwrap itself are found on the default one.
  const extraArgs = [...view.args, ...unset, '--setenv', 'PATH', env.PATH];
  const { bwrap, tmpBytes } = options;
  const profile = { bwrap, tmpBytes, env: { ...env, PATH: DEFAULT_PATH }, extraArgs, network: true };
  return unprivileged(bubblewrapCommand(profile, [file, ...args]), MCP_UID);
}

/** Limits set before anything of the server runs: a cgroup it joins first, or rlimits. */
function limited(options: McpStdioOptions, command: Command, cgroup: ToolCgroup | null): Command {
  if (cgroup) return cgroup.join(command);
  // RLIMIT_AS would stop node from starting (V8 reserves address space); RLIMIT_DATA counts what a
  // process writes. RLIMIT_NPROC counts the processes of the uid: of every stdio server together.
  const rlimits = [`--data=${options.memoryBytes}`, `--nproc=${options.maxProcesses}`, '--'];
  return { ...command, file: 'prlimit', args: [...rlimits, command.file, ...command.args] };
}

const environment = (options: McpStdioOptions, config: Pick<StdioConfig, 'env'>) => ({
  PATH: DEFAULT_PATH,
  ...(options.mode === 'sandboxed' ? { HOME: WORK_DIR } : {}),
  ...(config.env ?? {}),
});

type Cgroups = ReturnType<typeof cgroups>;

/** Whether the sandbox works on this host: runs `true` in it; the reason it does not, or null. */
async function probe(options: McpStdioOptions, limits: Cgroups): Promise<string | null> {
  const cgroup = limits.create('mcp');
  try {
    const command = limited(options, sandboxed(options, 'true', [], environment(options, {})), cgroup);
    return await new Promise((resolve) =>
      execFile(
        command.file,
        command.args,
        { env: command.env, timeout: PROBE_TIMEOUT_MS },
        (error, _stdout, stderr) =>
          resolve(error ? (stderr.trim() || error.message).replace(/\s*\n\s*/g, '; ') : null),
      ),
    );
  } catch (error) {
    return (error as Error).message;
  } finally {
    await cgroup?.remove();
  }
}

/** The transport of a stdio server run in the sandbox, in a cgroup of its own (or under rlimits). */
function sandboxedTransport(
  options: McpStdioOptions,
  limits: Cgroups,
  config: Pick<StdioConfig, 'command' | 'args'>,
  env: Record<string, string>,
): StdioClientTransport {
  const command = sandboxed(options, config.command, config.args, env);
  const cgroup = limits.create('mcp');
  const { file, args } = limited(options, command, cgroup);
  const transport = new StdioClientTransport({
    command: file,
    args,
    env: command.env,
    stderr: 'pipe',
    maxBufferSize: options.maxMessageBytes,
  });
  // The server is gone with its PID namespace once bwrap exits; its cgroup goes then.
  if (cgroup) transport.onclose = () => void cgroup.remove();
  return transport;
}

export function mcpStdioLauncher(options: McpStdioOptions): McpStdioLauncher {
  const limits = cgroups(
    options.mode === 'sandboxed'
      ? { memoryBytes: options.memoryBytes, processes: options.maxProcesses }
      : null,
  );
  let probed: Promise<string | null> | undefined;
  const problem = () =>
    options.mode === 'sandboxed' ? (probed ??= probe(options, limits)) : Promise.resolve(null);

  return {
    mode: options.mode,
    problem,
    describe: () =>
      options.mode === 'sandboxed'
        ? `sandboxed (bubblewrap, network allowed; ${limits.describe()})`
        : options.mode === 'host'
          ? 'host (NO isolation)'
          : 'off',
    async check(config) {
      if (options.mode === 'off') {
        throw new McpStdioRefusedError(
          'stdio MCP servers are turned off on this server (MCP_STDIO=off): register a streamable_http or sse server instead',
        );
      }
      if (options.mode === 'host') return;
      const reason = await problem();
      if (reason) {
        throw new McpStdioRefusedError(
          `the MCP sandbox (bubblewrap) does not work on this host (${reason.slice(0, 300)}): fix it, or set MCP_STDIO=host to run stdio servers without isolation`,
        );
      }
      sandboxed(options, config.command, config.args, environment(options, config));
    },
    async transport(config) {
      await this.check(config);
      const env = environment(options, config);
      if (options.mode === 'host')
        return new StdioClientTransport({
          command: pythonAlias(config.command, env.PATH),
          args: config.args,
          env,
          stderr: 'pipe',
          maxBufferSize: options.maxMessageBytes,
        });
      return sandboxedTransport(options, limits, config, env);
    },
  };
}
