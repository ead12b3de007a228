import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { defineSearchAttributeKey } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import type { Logger } from '../logger';
import { errorText } from './connection';
import { replayOptions } from '../observability/temporal';

/**
 * A new build replays the cluster's own histories before it takes their workflows: a build whose
 * workflow code issues other commands for one of them would fail that workflow's next task with a
 * non-determinism error after the upgrade; here it fails first, naming the workflow.
 *
 * What it replays, per long-lived workflow type: every open (running or paused) execution when there
 * are at most `openPerType`; past that, `openPerType` of them, taken oldest first from each worker
 * deployment version that last ran some (their `TemporalWorkerDeploymentVersion`), one version after
 * the other: the oldest open execution is always among them (a turn paused for approval for weeks,
 * written by the oldest code still in the histories, whose next task goes to whatever version is
 * current then), and so are the oldest of every version, whose histories end with the commands that
 * version's code issued. Then the `closedPerType` most recently closed executions of the type, the
 * shapes the latest builds write. Visibility cannot sort by start time on SQL stores (the dev server's
 * SQLite, a self-hosted cluster's PostgreSQL), so the open executions are paged through, all of them,
 * keeping the oldest of each version: a listing of 1,000 a page, cheap beside replaying a history.
 */

/**
 * The workflow types that live across releases: every one workflows/index.ts registers
 * (test/worker-versioning.test.ts checks), `agentStep` the type of the turns in histories recorded by
 * earlier releases.
 */
export const LONG_LIVED_TYPES = [
  'agentSession',
  'agentTurn',
  'agentMessageCall',
  'agentStep',
  'fileIngestion',
  'webhookDelivery',
  'scheduledMessage',
] as const;

/**
 * How much of each type is replayed (`WORKER_REPLAY_OPEN_MAX`, `WORKER_REPLAY_CLOSED`;
 * docs/upgrades.md states the cost).
 */
export interface SampleLimits {
  /** Open executions of a type: all when at most this many, else this many, the oldest of each version. */
  openPerType: number;
  /** The most recently closed executions of a type, besides. */
  closedPerType: number;
}

export interface SampleOptions extends SampleLimits {
  client: Client;
  /** A visibility filter ANDed with the workflow types, e.g. `TaskQueue = "…"` for one deployment. */
  where?: string;
}

export interface ReplaySampleOptions extends SampleOptions {
  /** The module whose exports are the build's workflows (what its worker bundles). */
  workflowsPath: string;
}

export interface SampledExecution {
  workflowId: string;
  runId: string;
  type: string;
  /** The worker deployment version that last ran it (`deployment:buildId`), or `unversioned`. */
  version: string;
  open: boolean;
  startTime: Date;
}

/**
 * Per type: how many executions are open, under how many versions, and how many open and closed ones
 * the sample holds.
 */
export type SampleCounts = Record<
  string,
  { open: number; versions: number; sampledOpen: number; sampledClosed: number }
>;

export interface Sample {
  executions: SampledExecution[];
  counts: SampleCounts;
}

export interface ReplayFailure {
  workflowId: string;
  runId: string;
  type: string;
  version: string;
  /** The error's kind and Core's own message (the event that did not match). */
  error: string;
}

export interface ReplaySampleResult {
  replayed: number;
  failures: ReplayFailure[];
  counts: SampleCounts;
  /** How long the listing, the fetching and the replay took. */
  ms: number;
}

const LIST_PAGE_SIZE = 1000;
/** Histories fetched ahead of the replay, which takes one at a time. */
const FETCH_AHEAD = 4;
const LAST_VERSION = defineSearchAttributeKey('TemporalWorkerDeploymentVersion', 'KEYWORD');

const quoted = (values: readonly string[]) => values.map((v) => `"${v}"`).join(', ');
const filtered = (query: string, where: string | undefined) => (where ? `${query} AND ${where}` : query);
const olderFirst = (a: SampledExecution, b: SampledExecution) =>
  a.startTime.getTime() - b.startTime.getTime() || a.workflowId.localeCompare(b.workflowId);

function sampled(execution: WorkflowExecutionInfo, open: boolean): SampledExecution {
  const { workflowId, runId, type, startTime } = execution;
  const version = execution.typedSearchAttributes.get(LAST_VERSION) ?? 'unversioned';
  return { workflowId, runId, type, version, open, startTime };
}

/**
 * `limit` executions of `groups` (all when they hold no more): each group's oldest first, one of each
 * group in turn, the group with the oldest first; oldest first in the result.
 */
export function oldestOfEach(groups: SampledExecution[][], limit: number): SampledExecution[] {
  const lists = groups
    .filter((group) => group.length)
    .map((group) => [...group].sort(olderFirst))
    .sort((a, b) => olderFirst(a[0], b[0]));
  const chosen: SampledExecution[] = [];
  for (let round = 0; chosen.length < limit; round++) {
    const taken = lists.filter((list) => round < list.length).map((list) => list[round]);
    if (!taken.length) break;
    chosen.push(...taken.slice(0, limit - chosen.length));
  }
  return chosen.sort(olderFirst);
}

/** Per type, how many executions are open, under how many versions, and the ones the sample holds. */
async function sampleOpen(options: SampleOptions, types: readonly string[]) {
  // type → version → its oldest open executions: no version can give the sample more than the limit.
  const byVersion = new Map(types.map((type) => [type, new Map<string, SampledExecution[]>()]));
  const open = new Map(types.map((type) => [type, 0]));
  const limit = options.openPerType;
  const keepOldest = (list: SampledExecution[]) => list.sort(olderFirst).splice(limit);
  const query = filtered(`WorkflowType IN (${quoted(types)}) AND ExecutionStatus = "Running"`, options.where);
  for await (const info of options.client.workflow.list({ query, pageSize: LIST_PAGE_SIZE })) {
    const versions = byVersion.get(info.type);
    if (!versions) continue;
    open.set(info.type, open.get(info.type)! + 1);
    const execution = sampled(info, true);
    const list = versions.get(execution.version) ?? [];
    versions.set(execution.version, list);
    list.push(execution);
    // Trimmed now and then, so memory stays a few times the limit however many are open.
    if (list.length >= 2 * limit + LIST_PAGE_SIZE) keepOldest(list);
  }
  return new Map(
    types.map((type) => {
      const groups = [...byVersion.get(type)!.values()];
      return [type, { open: open.get(type)!, versions: groups.length, chosen: oldestOfEach(groups, limit) }];
    }),
  );
}

/** The `closedPerType` executions of `type` closed last, as visibility lists them (most recent first). */
async function recentlyClosed(options: SampleOptions, type: string): Promise<SampledExecution[]> {
  const found: SampledExecution[] = [];
  if (options.closedPerType <= 0) return found;
  const query = filtered(`WorkflowType = "${type}" AND ExecutionStatus != "Running"`, options.where);
  for await (const info of options.client.workflow.list({ query, pageSize: options.closedPerType })) {
    found.push(sampled(info, false));
    if (found.length >= options.closedPerType) break;
  }
  return found;
}

/** The sample: per type, its open executions (oldest first) then its recently closed ones. */
export async function sampleExecutions(
  options: SampleOptions,
  types: readonly string[] = LONG_LIVED_TYPES,
): Promise<Sample> {
  const open = await sampleOpen(options, types);
  const executions: SampledExecution[] = [];
  const counts: SampleCounts = {};
  for (const type of types) {
    const closed = await recentlyClosed(options, type);
    const { chosen, ...count } = open.get(type)!;
    executions.push(...chosen, ...closed);
    counts[type] = { ...count, sampledOpen: chosen.length, sampledClosed: closed.length };
  }
  return { executions, counts };
}

/** The gist of a replay error: Core's message naming the mismatched event when it has one. */
const detailOf = (error: Error) =>
  `${error.name}: ${error.message.match(/\[TMPRL\d+\][^"]*/)?.[0] ?? error.message.split('\n')[0].slice(0, 500)}`;

/** `fetch(item)` for each item in order, up to `ahead` of them in flight. `fetch` must not reject. */
async function* fetchedAhead<T, R>(items: T[], fetch: (item: T) => Promise<R>, ahead: number) {
  const inFlight: Promise<R>[] = [];
  let next = 0;
  while (next < items.length || inFlight.length) {
    while (next < items.length && inFlight.length < ahead) inFlight.push(fetch(items[next++]));
    yield await inFlight.shift()!;
  }
}

/**
 * Replays the sample's histories against the workflows of `workflowsPath`, in one replay worker;
 * returns how many replayed and which did not. A history that cannot be fetched (its workflow was
 * deleted meanwhile) is left out. An empty sample needs no replay worker.
 */
export async function replaySample(options: ReplaySampleOptions): Promise<ReplaySampleResult> {
  const started = Date.now();
  const { executions, counts } = await sampleExecutions(options);
  const failures: ReplayFailure[] = [];
  let replayed = 0;
  if (executions.length) {
    // Each history goes by its place in the sample: a session's runs share their workflow id.
    const fetchOne = async (index: number) => {
      const { workflowId, runId } = executions[index];
      const history = await options.client.workflow
        .getHandle(workflowId, runId)
        .fetchHistory()
        .catch(() => undefined);
      return { workflowId: String(index), history };
    };
    const histories = async function* () {
      for await (const { workflowId, history } of fetchedAhead([...executions.keys()], fetchOne, FETCH_AHEAD))
        if (history) yield { workflowId, history };
    };
    for await (const result of Worker.runReplayHistories(
      { workflowsPath: options.workflowsPath, replayName: 'upgrade-replay', ...replayOptions },
      histories(),
    )) {
      replayed++;
      if (result.error) {
        const { workflowId, runId, type, version } = executions[Number(result.workflowId)];
        failures.push({ workflowId, runId, type, version, error: detailOf(result.error) });
      }
    }
  }
  return { replayed, failures, counts, ms: Date.now() - started };
}

/** One line per failure, for a log or a terminal. */
export const describeFailures = (failures: ReplayFailure[]): string =>
  failures
    .map((f) => `${f.type} ${f.workflowId} (run ${f.runId}, last run by ${f.version}): ${f.error}`)
    .join('\n');

/** One line for the sample: per type, how many are open and how many open and closed ones it holds. */
export const describeCounts = (counts: SampleCounts): string =>
  Object.entries(counts)
    .filter(([, c]) => c.open || c.sampledClosed)
    .map(([type, c]) => {
      const open =
        c.sampledOpen === c.open
          ? `${c.open} open`
          : `${c.sampledOpen} of ${c.open} open (the oldest of each of ${c.versions} versions)`;
      return `${type}: ${open}, ${c.sampledClosed} closed`;
    })
    .join('; ') || 'no histories';

/**
 * Why this build must not become current: the sampled histories it cannot replay, or why the replay
 * could not run (then nothing says it is safe). Undefined when all replay.
 */
export async function vetBuild(options: ReplaySampleOptions & { log: Logger }): Promise<string | undefined> {
  try {
    const { replayed, failures, counts, ms } = await replaySample(options);
    if (failures.length)
      return `${failures.length} of the ${replayed} histories sampled do not replay:\n${describeFailures(failures)}`;
    options.log.info(
      { replayed, ms, sample: describeCounts(counts) },
      'this build replays the open and recent histories of every long-lived workflow type',
    );
    return undefined;
  } catch (error) {
    return `the replay of the open and recent histories could not run: ${errorText(error)}`;
  }
}
