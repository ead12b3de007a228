import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import type { Logger } from '../logger';
import { errorText } from './connection';
import { replayOptions } from '../observability/temporal';

/**
 * A new build replays a sample of the cluster's own histories before it takes their workflows: the
 * turns and sessions running now (a turn paused for approval waits for weeks, and its next task goes
 * to whatever version is current then), then the most recently started ones. A build whose workflow
 * code issues other commands for one of them would fail that workflow's next task with a
 * non-determinism error after the upgrade; here it fails first, naming the workflow.
 */

/**
 * The workflow types that live across releases (src/temporal/versioning.ts); `agentStep` is the type
 * of the turns in histories recorded by earlier releases.
 */
export const LONG_LIVED_TYPES = ['agentTurn', 'agentStep', 'agentSession'];

/** The sample's size unless told: enough to catch a turn of each shape a busy server holds. */
export const DEFAULT_REPLAY_SAMPLE = 50;

export interface ReplaySampleOptions {
  client: Client;
  /** The module whose exports are the build's workflows (what its worker bundles). */
  workflowsPath: string;
  /** How many histories at most. */
  limit: number;
  /** A visibility filter ANDed with the workflow types, e.g. `TaskQueue = "…"` for one deployment. */
  where?: string;
}

export interface ReplayFailure {
  workflowId: string;
  runId: string;
  /** The error's kind and Core's own message (the event that did not match). */
  error: string;
}

export interface ReplaySampleResult {
  replayed: number;
  failures: ReplayFailure[];
}

interface Sampled {
  workflowId: string;
  runId: string;
}

/** Up to `limit` executions matching `query`, in the order visibility lists them (newest first). */
async function listExecutions(client: Client, query: string, limit: number): Promise<Sampled[]> {
  const found: Sampled[] = [];
  if (limit <= 0) return found;
  for await (const execution of client.workflow.list({ query, pageSize: Math.min(limit, 1000) })) {
    found.push({ workflowId: execution.workflowId, runId: execution.runId });
    if (found.length >= limit) break;
  }
  return found;
}

/** The sample: running executions first, then closed ones, at most `limit` in all. */
export async function sampleExecutions(
  options: Omit<ReplaySampleOptions, 'workflowsPath'>,
): Promise<Sampled[]> {
  const types = LONG_LIVED_TYPES.map((type) => `"${type}"`).join(', ');
  const base = `WorkflowType IN (${types})${options.where ? ` AND ${options.where}` : ''}`;
  const running = await listExecutions(
    options.client,
    `${base} AND ExecutionStatus = "Running"`,
    options.limit,
  );
  const closed = await listExecutions(
    options.client,
    `${base} AND ExecutionStatus != "Running"`,
    options.limit - running.length,
  );
  return [...running, ...closed];
}

/** The gist of a replay error: Core's message naming the mismatched event when it has one. */
const detailOf = (error: Error) =>
  `${error.name}: ${error.message.match(/\[TMPRL\d+\][^"]*/)?.[0] ?? error.message.split('\n')[0].slice(0, 500)}`;

/**
 * Replays the sample's histories against the workflows of `workflowsPath`, in one replay worker;
 * returns how many replayed and which did not. A history that cannot be fetched (its workflow was
 * deleted meanwhile) is left out.
 */
export async function replaySample(options: ReplaySampleOptions): Promise<ReplaySampleResult> {
  const sample = await sampleExecutions(options);
  // Each history goes by its place in the sample: a session's runs share their workflow id.
  const histories = async function* () {
    for (const [index, { workflowId, runId }] of sample.entries()) {
      const history = await options.client.workflow
        .getHandle(workflowId, runId)
        .fetchHistory()
        .catch(() => undefined);
      if (history) yield { workflowId: String(index), history };
    }
  };
  const failures: ReplayFailure[] = [];
  let replayed = 0;
  for await (const result of Worker.runReplayHistories(
    { workflowsPath: options.workflowsPath, replayName: 'upgrade-replay', ...replayOptions },
    histories(),
  )) {
    replayed++;
    if (result.error) failures.push({ ...sample[Number(result.workflowId)], error: detailOf(result.error) });
  }
  return { replayed, failures };
}

/** One line per failure, for a log or a terminal. */
export const describeFailures = (failures: ReplayFailure[]): string =>
  failures.map((f) => `${f.workflowId} (run ${f.runId}): ${f.error}`).join('\n');

/**
 * Why this build must not replace the deployment's current version: the sampled histories it cannot
 * replay, or why the replay could not run (then nothing says it is safe). Undefined when all replay.
 */
export async function vetBuild(options: ReplaySampleOptions & { log: Logger }): Promise<string | undefined> {
  try {
    const { replayed, failures } = await replaySample(options);
    if (failures.length)
      return `${failures.length} of the ${replayed} histories sampled do not replay:\n${describeFailures(failures)}`;
    options.log.info({ replayed }, 'this build replays the running and recent turn and session histories');
    return undefined;
  } catch (error) {
    return `the replay of recent histories could not run: ${errorText(error)}`;
  }
}
