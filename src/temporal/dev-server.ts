import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { TypedSearchAttributes } from '@temporalio/common';
import type { Logger } from '../logger';
import { connectTemporal, errorText } from './connection';
import { customSearchAttributes } from '../../contracts/search-attributes';

/**
 * Server settings the agent turn relies on: updates and update-with-start (every message reaches its
 * agent's session as one, and a burst of them must not hit the default limit of 10 in flight per
 * workflow) and eager dispatch (it cuts a matching round trip per tool call). The rest is latency:
 * the dev server has one history shard, whose transfer queue (activity and workflow tasks on their way
 * to matching) is read at most `transferProcessorMaxPollRPS` times a second, 20 by default, so a task
 * waits for the next read, up to a twentieth of a second, twice per activity. Task queue partitions spread load over matching
 * nodes a dev server does not have, and a task on a partition no poller is on waited seconds for a
 * forward.
 *
 * The CLI turns on `forceSearchAttributesCacheRefreshOnRead` so that a search attribute is usable the
 * moment it is created; every workflow task and upsert then read the cluster metadata from SQLite again
 * (~10 reads per paused run). Our attributes are registered at start-up, before any workflow runs, and
 * a custom attribute of SQL visibility is a namespace alias, which that cache does not hold anyway: with
 * the cache on, the dev server spent ~12% less CPU per paused run.
 */
export const DEV_SERVER_DYNAMIC_CONFIG = [
  'frontend.enableUpdateWorkflowExecution=true',
  'frontend.enableUpdateWorkflowExecutionAsyncAccepted=true',
  'frontend.enableExecuteMultiOperation=true',
  'system.enableActivityEagerExecution=true',
  'system.enableEagerWorkflowStart=true',
  'frontend.enableServerVersionCheck=false',
  'history.transferProcessorMaxPollRPS=1000',
  'matching.numTaskqueueReadPartitions=1',
  'matching.numTaskqueueWritePartitions=1',
  'system.forceSearchAttributesCacheRefreshOnRead=false',
  'history.maxInFlightUpdates=1000',
  // Each server (each test's) registers a worker deployment of its own; the default allows 100 per
  // namespace, past which a new one is never found.
  'matching.maxDeployments=10000',
];

/**
 * The history file in write-ahead-log mode, synced at checkpoints rather than at every commit: SQLite's
 * default journal syncs each history write to disk, several per activity. A killed process loses
 * nothing (the log is in the OS's cache); an OS crash or power cut may lose the last moments.
 *
 * The dev server does all its persistence through one SQLite connection, and a checkpoint (the log
 * copied back into the file) runs in it, holding up everything else. Every visibility write touches
 * dozens of index pages; pausing runs as fast as this 2-core machine could, the server wrote ~40 MB/s,
 * and SQLite's default of a checkpoint every 1,000 pages (4 MB) ran several times a second. With one
 * every 10,000 pages, a 64 MB page cache (2 MB by default) and reads through mmap, the dev server spent
 * a fifth less CPU per paused run (bench/paused-runs.ts, 1,000 runs).
 */
const SQLITE_PRAGMAS = [
  'journal_mode=wal',
  'synchronous=normal',
  'wal_autocheckpoint=10000',
  'cache_size=-65536',
  'mmap_size=268435456',
];

const dynamicConfigArgs = (values: string[]) => values.flatMap((value) => ['--dynamic-config-value', value]);

/** The flags of `temporal server start-dev` that tune it for the agent turn, whichever way it is started. */
export const devServerTuningArgs = () => [
  ...dynamicConfigArgs(DEV_SERVER_DYNAMIC_CONFIG),
  ...SQLITE_PRAGMAS.flatMap((pragma) => ['--sqlite-pragma', pragma]),
];

/**
 * A fresh dev server creates our search attributes before it serves, so the first turn can set them
 * (added later, they reach the namespace's cache only at its next refresh). An existing db file keeps
 * the ones it has, and start-up registers any it lacks (src/temporal/search-attributes.ts).
 */
const searchAttributeArgs = () =>
  customSearchAttributes.flatMap((key) => [
    '--search-attribute',
    `${key.name}=${TypedSearchAttributes.toMetadataType(key.type)}`,
  ]);

export interface DevServerOptions {
  binary: string;
  dataDir: string;
  port: number;
  uiPort: number;
  namespace: string;
  startTimeoutMs: number;
  log: Logger;
  /** `key=value` settings of the server's dynamic config besides the tuning (a test's). */
  dynamicConfig?: string[];
}

export interface RunningDevServer {
  address: string;
  uiUrl: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev` with its history in DATA_DIR/temporal.db, so paused workflows
 * survive a restart. The child gets its own process group: a Ctrl-C reaches only us, and we stop it
 * last, after the worker has let go of it.
 */
export async function startDevServer(options: DevServerOptions): Promise<RunningDevServer> {
  const { binary, dataDir, port, uiPort, namespace, log } = options;
  fs.mkdirSync(dataDir, { recursive: true });
  const pidFile = path.join(dataDir, 'temporal.pid');
  const dbFile = path.join(dataDir, 'temporal.db');
  await killLeftover(pidFile, dbFile, log);

  const args = [
    'server', 'start-dev',
    '--ip', '127.0.0.1',
    '--port', String(port),
    '--ui-port', String(uiPort),
    '--db-filename', dbFile,
    '--namespace', namespace,
    '--log-level', 'warn',
    ...devServerTuningArgs(),
    ...dynamicConfigArgs(options.dynamicConfig ?? []),
    ...searchAttributeArgs(),
  ]; // prettier-ignore
  const child = spawn(binary, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new Error(`could not start ${binary}`);
  fs.writeFileSync(pidFile, String(child.pid));
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);

  const output = relayOutput(child, log);
  const address = `127.0.0.1:${port}`;
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, signal) =>
      reject(new Error(`temporal server exited (${signal ?? code}) during start-up:\n${output.tail()}`)),
    ),
  );
  try {
    const connection = await Promise.race([connectTemporal(address, options.startTimeoutMs), exited]);
    await connection.close();
  } catch (error) {
    await stopChild(child);
    throw error;
  }
  exited.catch(() => {}); // after start-up, an exit is reported by the 'exit' listener below
  child.on('exit', (code, signal) => log.warn({ code, signal }, 'embedded Temporal server exited'));

  return {
    address,
    uiUrl: `http://127.0.0.1:${uiPort}`,
    pid: child.pid,
    async stop() {
      child.removeAllListeners('exit');
      await stopChild(child);
      process.off('exit', killOnExit);
      fs.rmSync(pidFile, { force: true });
    },
  };
}

/** SIGTERM, then SIGKILL if it has not gone after a few seconds. */
function stopChild(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** How long a leftover dev server may take to go once killed: its ports are free only then. */
const LEFTOVER_EXIT_MS = 10_000;

/**
 * A dev server left by a process that died without stopping it would hold the port and the db file:
 * it is killed, and the start waits until it has gone (it is not this process's child, so its exit is
 * seen in /proc), since its ports stay bound until then.
 */
async function killLeftover(pidFile: string, dbFile: string, log: Logger): Promise<void> {
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8'));
  fs.rmSync(pidFile, { force: true });
  if (!Number.isInteger(pid) || pid <= 0 || !isDevServerOn(pid, dbFile)) return;
  log.warn({ pid }, 'stopping a Temporal dev server left running by an earlier start');
  try {
    process.kill(pid, 'SIGKILL');
  } catch (error) {
    log.warn({ pid, error: errorText(error) }, 'could not stop the leftover Temporal dev server');
    return;
  }
  for (const deadline = Date.now() + LEFTOVER_EXIT_MS; isDevServerOn(pid, dbFile); await sleep(50))
    if (Date.now() > deadline) throw new Error(`the leftover Temporal dev server (pid ${pid}) did not exit`);
}

function isDevServerOn(pid: number, dbFile: string): boolean {
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes('start-dev') && cmdline.includes(dbFile);
  } catch {
    return false;
  }
}

/** The dev server logs at warn level; relay that, and keep the last lines for a start-up failure. */
function relayOutput(child: ChildProcess, log: Logger): { tail(): string } {
  const lines: string[] = [];
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) {
      lines.push(line);
      if (lines.length > 20) lines.shift();
      log.debug({ component: 'temporal-dev-server' }, line);
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  return { tail: () => lines.join('\n') };
}
