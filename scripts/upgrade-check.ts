/**
 * Upgrade check (issue 30, point 4), from outside: a turn paused for approval under the previous
 * release finishes after the server is replaced by the current code.
 *
 * The previous release is the last commit whose workflow code (workflows/) differs from the current
 * one: HEAD when workflows/ has uncommitted changes, otherwise the parent of the newest commit that
 * changed workflows/. `npm run upgrade:check -- <commit>` or UPGRADE_CHECK_PREVIOUS=<commit> picks
 * another. It is built from git (`git archive`, `npm ci`, `npm run build`) in a folder of the system's
 * temporary directory, kept per commit for the next run (UPGRADE_CHECK_REBUILD=1 builds it again).
 *
 * Then, on one PostgreSQL schema, one Temporal dev server, one DATA_DIR and one environment: the old
 * build's server (`--role=all`) takes a message the model (a local OpenAI-compatible stub) answers with
 * a memory_insert call that needs approval, and the turn pauses; the old server is killed (SIGKILL);
 * before the current build's server starts, the current build's workflows replay the check agent's
 * histories from the cluster (src/temporal/replay-sample.ts: the paused turn among them), as a server
 * does before it makes itself current; then the current build's server
 * starts, the approval is answered through the official client, and the turn must finish with the
 * tool run and the memory block changed. The last line says PASS or FAIL.
 *
 * `npm run upgrade:check -- --replay-only [--open=N] [--closed=N] [--where='<visibility filter>']` (or
 * `npm run upgrade:replay`) does the replay alone, against the cluster the TEMPORAL_* settings name as
 * they name the server's (address, namespace, TLS, API key, temporal.toml profile), with the sample a
 * server takes at start-up (WORKER_REPLAY_OPEN_MAX, WORKER_REPLAY_CLOSED unless told): the check of a
 * build before an operator makes it current (WORKER_VERSIONING=manual, the default with --role=worker).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Letta from '@letta-ai/letta-client';
import { Client, Connection } from '@temporalio/client';
import { loadConfig, type Config } from '../src/config';
import { projectRoot } from '../src/paths';
import { connectTemporal } from '../src/temporal/connection';
import {
  describeCounts,
  describeFailures,
  replaySample,
  sampleExecutions,
  type ReplaySampleResult,
  type SampleLimits,
} from '../src/temporal/replay-sample';
import { startOpenAiStub, type ChatRequest, type OpenAiStub } from '../test/helpers/openai-stub';
import { createTestSchema, type TestSchema } from '../test/helpers/postgres';
import { startProcess, waitForStatus, type StartedProcess } from '../test/helpers/process';
import { apiUrl, killProcess, serverProcessEnv } from '../test/helpers/server-processes';
import { startTemporalServer } from '../test/helpers/temporal-server';
import type { RunningDevServer } from '../src/temporal/dev-server';

export interface UpgradeCheckOptions {
  /** The previous release (any commit-ish); default: the last commit whose workflows/ differ. */
  previous?: string;
  /** A Temporal frontend to use; unset: a dev server of the check's own, stopped at the end. */
  temporalAddress?: string;
  /** Where progress goes, a line at a time. */
  log?: (line: string) => void;
}

export interface UpgradeCheckResult {
  previous: string;
  previousSubject: string;
  agentId: string;
  seconds: number;
}

const git = (...args: string[]) =>
  execFileSync('git', args, { cwd: projectRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/**
 * The last commit whose workflow code differs from the current one: HEAD when workflows/ has changes
 * not committed yet, else the parent of the newest commit that changed workflows/.
 */
export function previousWorkflowCommit(): string {
  if (git('status', '--porcelain', '--', 'workflows/')) return git('rev-parse', 'HEAD');
  const newest = git('log', '-1', '--format=%H', 'HEAD', '--', 'workflows/');
  try {
    return git('rev-parse', '--verify', `${newest}^`);
  } catch {
    throw new Error(
      `no commit before ${newest.slice(0, 12) || 'HEAD'} in this clone's history (a shallow clone? ` +
        '`git fetch --unshallow`), or name the previous release: npm run upgrade:check -- <commit>',
    );
  }
}

function run(command: string, args: string[], cwd: string): void {
  try {
    execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${tail(`${stdout}${stderr}`, 40)}`);
  }
}

const tail = (text: string, lines: number) => text.split('\n').slice(-lines).join('\n');

/**
 * The previous release built in `<tmpdir>/letta-upgrade-check-<commit>`: its files from git, its
 * dependencies (a hard-linked copy of this checkout's node_modules when both lock files are the same,
 * else `npm ci --prefer-offline`: the npm cache, the registry for what it lacks), `npm run build`.
 * Built in a folder of its own and renamed when done, so a broken or concurrent build is never used.
 */
function buildPrevious(commit: string, log: (line: string) => void): string {
  const dir = path.join(os.tmpdir(), `letta-upgrade-check-${commit.slice(0, 12)}`);
  const built = (folder: string) => fs.existsSync(path.join(folder, '.upgrade-check-built'));
  if (process.env.UPGRADE_CHECK_REBUILD) fs.rmSync(dir, { recursive: true, force: true });
  if (built(dir)) {
    log(`reusing the build of ${commit.slice(0, 12)} in ${dir} (UPGRADE_CHECK_REBUILD=1 builds it again)`);
    return dir;
  }
  const work = fs.mkdtempSync(`${dir}.building-`);
  try {
    log(`extracting ${commit.slice(0, 12)} from git into ${work}`);
    execFileSync('bash', ['-o', 'pipefail', '-c', `git archive ${commit} | tar -x -C "${work}"`], {
      cwd: projectRoot,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const sameLock =
      fs.existsSync(path.join(projectRoot, 'node_modules')) &&
      fs.readFileSync(path.join(work, 'package-lock.json'), 'utf8') ===
        fs.readFileSync(path.join(projectRoot, 'package-lock.json'), 'utf8');
    let installed = false;
    if (sameLock && process.env.UPGRADE_CHECK_INSTALL !== 'ci') {
      log('same package-lock.json as this checkout: hard-linking its node_modules');
      try {
        execFileSync('cp', ['-al', path.join(projectRoot, 'node_modules'), work], { stdio: 'pipe' });
        installed = true;
      } catch {
        fs.rmSync(path.join(work, 'node_modules'), { recursive: true, force: true });
      }
    }
    if (!installed) {
      log('npm ci --prefer-offline (its own package-lock.json)');
      run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], work);
    }
    log('npm run build');
    run('npm', ['run', '--silent', 'build'], work);
    fs.writeFileSync(path.join(work, '.upgrade-check-built'), `${commit}\n`);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(work, dir);
  } catch (error) {
    fs.rmSync(work, { recursive: true, force: true });
    // Another run built it meanwhile.
    if (built(dir)) return dir;
    throw error;
  }
  return dir;
}

/** `node dist/src/main.js --role=all` of the build in `dir`, once its health check answers. */
async function startServer(dir: string, env: Record<string, string>): Promise<StartedProcess> {
  const server = startProcess('node', ['dist/src/main.js', '--role=all'], env, dir);
  await waitForStatus(`${apiUrl(env)}/v1/health/`, 200, server, 90_000);
  return server;
}

/** The colour codes of the SDK core's log lines. */
const ANSI_COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');

/**
 * Fails as soon as the server's log says the current code could not replay a workflow's history
 * (the SDK fails the workflow task and retries it forever, so the request would only time out).
 */
function watchForNondeterminism(server: StartedProcess): { failed: Promise<never>; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  const failed = new Promise<never>((_, reject) => {
    timer = setInterval(() => {
      const line = server
        .output()
        .replace(ANSI_COLOUR, '')
        .match(/.*Nondeterminism error.*/i)?.[0];
      if (line) {
        const reason = line.match(/Nondeterminism error[^"]*/i)?.[0] ?? line;
        reject(new Error(`the current code cannot replay the paused turn: ${reason.slice(0, 300)}`));
      }
    }, 250);
  });
  failed.catch(() => {});
  return { failed, stop: () => clearInterval(timer) };
}

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Error(what);
}

/** The approval request a paused response ends with. */
interface ApprovalRequest {
  message_type: string;
  tool_call: { tool_call_id: string; name: string };
}

/** A failed check: what went wrong, and the server output that may tell why. */
export class UpgradeCheckError extends Error {
  constructor(
    message: string,
    readonly details: string,
    cause: unknown,
  ) {
    super(message, { cause });
  }
}

const HUMAN = 'Name: Alice';
const INSERT = { label: 'human', new_str: 'Likes tea' };
const FINAL_TEXT = 'Noted: you like tea.';

export async function runUpgradeCheck(options: UpgradeCheckOptions = {}): Promise<UpgradeCheckResult> {
  const log = options.log ?? (() => {});
  const started = Date.now();
  const wanted = options.previous ?? previousWorkflowCommit();
  let previous: string;
  try {
    previous = git('rev-parse', '--verify', `${wanted}^{commit}`);
  } catch {
    throw new Error(`${wanted} is no commit of this clone (a shallow clone? \`git fetch --unshallow\`)`);
  }
  const previousSubject = git('log', '-1', '--format=%h %s', previous).slice(0, 100);
  log(`previous release: ${previousSubject}`);
  const current = fs.existsSync(path.join(projectRoot, 'dist', 'src', 'main.js'));
  check(current, `no build of the current code in ${projectRoot}/dist: run \`npm run build\``);
  const oldDir = buildPrevious(previous, log);

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-upgrade-data-'));
  let schema: TestSchema | undefined;
  let stub: OpenAiStub | undefined;
  let temporal: RunningDevServer | undefined;
  let server: StartedProcess | undefined;
  let which = 'previous';
  try {
    schema = await createTestSchema();
    log(`PostgreSQL schema ${schema.name}; DATA_DIR ${dataDir}`);
    let temporalAddress = options.temporalAddress;
    if (!temporalAddress) {
      ({ server: temporal } = await startTemporalServer(dataDir));
      temporalAddress = temporal.address;
    }
    log(`Temporal at ${temporalAddress}`);
    stub = await startOpenAiStub();
    const env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress,
      openAiBaseUrl: stub.baseURL,
    });
    const client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0, timeout: 120_000 });

    log(`starting the previous release's server (${oldDir}/dist/src/main.js --role=all)`);
    server = await startServer(oldDir, env);
    const agent = await client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: HUMAN }],
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    });
    stub.enqueue({ toolCalls: [{ name: 'memory_insert', arguments: INSERT }] });
    stub.enqueue((request: ChatRequest) => {
      const last = request.messages.at(-1);
      return last?.role === 'tool'
        ? { text: FINAL_TEXT }
        : { text: `expected the tool's return last, got ${JSON.stringify(last)}` };
    });
    const paused = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Remember that I like tea.' }],
    });
    const request = paused.messages.at(-1) as unknown as ApprovalRequest;
    check(
      paused.stop_reason.stop_reason === 'requires_approval' &&
        request.message_type === 'approval_request_message' &&
        request.tool_call.name === 'memory_insert',
      `the turn did not pause for approval of memory_insert: ${JSON.stringify(paused)}`,
    );
    log(
      `agent ${agent.id}: the turn paused for approval of memory_insert (${request.tool_call.tool_call_id})`,
    );

    log('killing the previous release (SIGKILL)');
    await killProcess(server, 'SIGKILL');
    await replayBeforeStart(temporalAddress, agent.id, sampleLimits(loadConfig(env)), log);
    which = 'current';
    log(`starting the current code's server (${projectRoot}/dist/src/main.js --role=all)`);
    server = await startServer(projectRoot, env);
    log('answering the approval through the official client');
    const watch = watchForNondeterminism(server);
    const answered = await Promise.race([
      client.agents.messages.create(agent.id, {
        messages: [{ type: 'approval', approval_request_id: request.tool_call.tool_call_id, approve: true }],
      }),
      watch.failed,
    ]).finally(watch.stop);
    const types = answered.messages.map((m) => m.message_type);
    const toolReturn = answered.messages.find((m) => m.message_type === 'tool_return_message') as
      { status?: string } | undefined;
    const reply = answered.messages.find((m) => m.message_type === 'assistant_message') as
      { content?: unknown } | undefined;
    check(
      answered.stop_reason.stop_reason === 'end_turn' &&
        toolReturn?.status === 'success' &&
        reply?.content === FINAL_TEXT,
      `the turn did not finish as expected (${types.join(', ')}): ${JSON.stringify(answered)}`,
    );
    log(`the turn finished: ${types.join(', ')}; stop_reason end_turn`);
    const block = await client.agents.blocks.retrieve('human', { agent_id: agent.id });
    check(block.value === `${HUMAN}\n${INSERT.new_str}`, `the human block is ${JSON.stringify(block.value)}`);
    log(`the tool ran under the current code: the human block is ${JSON.stringify(block.value)}`);
    return {
      previous,
      previousSubject,
      agentId: agent.id,
      seconds: Math.round((Date.now() - started) / 1000),
    };
  } catch (error) {
    const output = server?.output() ?? '';
    const message = error instanceof Error ? error.message : String(error);
    const hint =
      /nondetermin/i.test(output) && !/nondetermin/i.test(message)
        ? ' (its log reports non-determinism)'
        : '';
    throw new UpgradeCheckError(
      `${message}${hint}`,
      `--- last lines of the ${which} release's server output ---\n${tail(output, 30)}`,
      error,
    );
  } finally {
    if (server) await killProcess(server, 'SIGKILL');
    await stub?.close();
    await temporal?.stop();
    await schema?.drop().catch(() => {});
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The current build's workflows, as its worker bundles them. */
const currentWorkflows = () => require.resolve('../workflows');

/** The sample a server with `config` replays before it becomes current. */
const sampleLimits = (config: Config): SampleLimits => ({
  openPerType: config.WORKER_REPLAY_OPEN_MAX,
  closedPerType: config.WORKER_REPLAY_CLOSED,
});

/**
 * The current build replays the check's agent's histories from the cluster before it starts: on a
 * shared cluster, the other histories are not the check's to judge.
 */
async function replayBeforeStart(
  address: string,
  agentId: string,
  limits: SampleLimits,
  log: (line: string) => void,
): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const sample = { client: new Client({ connection }), ...limits, where: `LettaAgentId = "${agentId}"` };
    // Visibility lists a workflow a moment after it starts (up to a second with Elasticsearch).
    for (let tries = 0; tries < 20; tries++) {
      if ((await sampleExecutions(sample)).executions.length) break;
      await sleep(500);
    }
    const { replayed, failures } = await replaySample({ ...sample, workflowsPath: currentWorkflows() });
    check(
      failures.length === 0,
      `the current code cannot replay ${failures.length} of ${replayed} histories:\n${describeFailures(failures)}`,
    );
    check(replayed > 0, 'no history to replay: the paused turn was not listed');
    log(`the current code replays the agent's ${replayed} histories from the cluster`);
  } finally {
    await connection.close();
  }
}

export interface ReplayOnlyOptions {
  /** Where the cluster's settings come from: TEMPORAL_* (and a temporal.toml profile) as the server reads them. */
  env: NodeJS.ProcessEnv;
  /** The sample's limits; unset: the server's (WORKER_REPLAY_OPEN_MAX, WORKER_REPLAY_CLOSED of `env`). */
  limits?: Partial<SampleLimits>;
  /** A visibility filter narrowing the sample, e.g. one deployment's `TaskQueue = "…"`. */
  where?: string;
  workflowsPath?: string;
}

/**
 * Replays the open and recent histories of every long-lived workflow type of the configured cluster
 * with the current build, as a server does before it becomes current.
 */
export async function runReplayOnly(options: ReplayOnlyOptions): Promise<ReplaySampleResult> {
  const config = loadConfig(options.env);
  if (!config.temporal)
    throw new Error(
      'no cluster to replay from: set TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE), or TEMPORAL_PROFILE',
    );
  const connection = await connectTemporal(config.temporal.connection, config.TEMPORAL_CONNECT_TIMEOUT_MS);
  try {
    return await replaySample({
      client: new Client({ connection, namespace: config.TEMPORAL_NAMESPACE }),
      workflowsPath: options.workflowsPath ?? currentWorkflows(),
      ...sampleLimits(config),
      ...options.limits,
      where: options.where,
    });
  } finally {
    await connection.close();
  }
}

/** `--name=value` of the command line. */
const flag = (args: string[], name: string) =>
  args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);

/** `--name=N` of the command line, a whole number at least `min`, or undefined. */
function countFlag(args: string[], name: string, min: number): number | undefined {
  const text = flag(args, name);
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min)
    throw new Error(`--${name} must be an integer of at least ${min}`);
  return value;
}

async function replayOnly(args: string[], say: (line: string) => void): Promise<void> {
  const limits = { openPerType: countFlag(args, 'open', 1), closedPerType: countFlag(args, 'closed', 0) };
  const { replayed, failures, counts, ms } = await runReplayOnly({
    env: process.env,
    limits: Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)),
    where: flag(args, 'where'),
  });
  say(`sample: ${describeCounts(counts)} (${replayed} replayed in ${(ms / 1000).toFixed(1)} s)`);
  if (failures.length) {
    process.stdout.write(`${describeFailures(failures)}\n`);
    say(`FAIL: this build cannot replay ${failures.length} of the ${replayed} histories sampled`);
    process.exit(1);
  }
  say(`PASS: this build replays the ${replayed} histories sampled`);
  process.exit(0);
}

async function main(): Promise<void> {
  const say = (line: string) => process.stdout.write(`upgrade-check: ${line}\n`);
  const args = process.argv.slice(2);
  const previous =
    args.find((arg) => !arg.startsWith('--')) || process.env.UPGRADE_CHECK_PREVIOUS || undefined;
  try {
    if (args.includes('--replay-only')) return await replayOnly(args, say);
    const result = await runUpgradeCheck({ previous, log: say });
    say(
      `PASS: a turn paused for approval under ${result.previousSubject} finished under the current code (${result.seconds} s)`,
    );
    process.exit(0);
  } catch (error) {
    if (error instanceof UpgradeCheckError) process.stdout.write(`${error.details}\n`);
    say(`FAIL: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}

if (require.main === module) void main();
