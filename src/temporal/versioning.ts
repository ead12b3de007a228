import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { NativeConnection, WorkerDeploymentOptions } from '@temporalio/worker';
import type { Queryable } from '../db/database';
import {
  markWorkerBuildCurrent,
  recordWorkerBuild,
  workerBuilds,
  type WorkerBuild,
} from '../db/worker-builds';
import type { Logger } from '../logger';
import { projectRoot, version as packageVersion } from '../paths';
import { errorText } from './connection';

/**
 * Worker versioning (Temporal Worker Deployments). Every worker of this server registers one
 * deployment version: the deployment is this server's deployment (its task-queue prefix and id, the
 * names its task queues carry), the build id its release. The server routes a workflow's tasks to the
 * deployment's current version, and each workflow type declares whether a run stays on the version
 * that started it (PINNED) or moves to the current one at its next task (AUTO_UPGRADE): see the
 * `setWorkflowOptions` call beside each workflow, and docs/upgrades.md.
 *
 * At start-up a worker records its build in this deployment's database (the order in which builds were
 * first seen, which every replica shares and Temporal's `delete-version` cannot erase), then takes its
 * standing (`standingOf`): a build becomes current by itself only when no version is current or an
 * older one is, and only once it has replayed the open histories of every long-lived workflow type
 * (src/temporal/replay-sample.ts). `WORKER_VERSIONING` (unset: `replay` for `--role=all`, `manual` for
 * `--role=worker`) says who replaces a current version:
 * - `replay`: the build itself, after the replay;
 * - `manual`: an operator (`npm run upgrade:replay`, then `temporal worker deployment
 *   set-current-version`, or `set-ramping-version` first): the log line names the commands.
 * A build never becomes current by itself when the current one was first seen after it (a roll-back),
 * when it was current before and another was made current since (an operator rolled it back), or
 * while an operator ramps a version.
 *
 * There is no unversioned mode: a workflow that declares its behaviour cannot complete a task on an
 * unversioned worker (the server refuses it: "versioning behavior cannot be specified without
 * deployment options being set with versioned mode"), so the cluster must have Worker Deployments
 * (Temporal server 1.28 or newer, or Temporal Cloud).
 */
export type VersioningMode = 'replay' | 'manual';

/** A deployment name may not contain `.` (Temporal joins name and build id with one). */
export function deploymentName(prefix: string, deploymentId: string): string {
  const name = `${prefix}${deploymentId}`.replace(/\.+$/, '').replace(/\./g, '-');
  return name || 'letta-temporal';
}

/** The commit this code was checked out at, when it runs from a git work tree of its own. */
export function gitCommit(root: string = projectRoot): string | undefined {
  try {
    const [top, commit] = execFileSync('git', ['rev-parse', '--show-toplevel', '--short=12', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5_000,
    })
      .trim()
      .split('\n');
    // A copy without .git inside someone else's repository must not take that repository's commit.
    if (!commit || fs.realpathSync(top) !== fs.realpathSync(root)) return undefined;
    return commit;
  } catch {
    return undefined;
  }
}

/** `WORKER_BUILD_ID`, else the release: package.json's version, plus the git commit when known. */
export function workerBuildId(override: string | undefined, commit: string | undefined): string {
  if (override) return override;
  return commit ? `${packageVersion}+${commit}` : packageVersion;
}

export function workerDeploymentOptions(version: WorkerDeploymentVersion): WorkerDeploymentOptions {
  // Each workflow declares its own behaviour; this default covers test workflows that do not.
  return { version, useWorkerVersioning: true, defaultVersioningBehavior: 'AUTO_UPGRADE' };
}

/** `WORKER_VERSIONING`, or the role's default: a worker-only process leaves upgrades to an operator. */
export function versioningMode(
  setting: VersioningMode | undefined,
  role: 'all' | 'api' | 'worker',
): VersioningMode {
  return setting ?? (role === 'worker' ? 'manual' : 'replay');
}

/**
 * Where a build stands against the deployment's routing, by the order this deployment's database
 * first saw its builds (`builds`; a build it never recorded, one that ran before the record existed,
 * is older than every recorded one, and one not recorded yet newer):
 * - `already`: it is current;
 * - `ramping`: an operator is ramping a version: the roll-out is theirs;
 * - `first`: no version is current (a first start): it may become current;
 * - `older`: the current build was first seen after it: it becoming current would be a roll-back;
 * - `rolled-back`: it was current once and an older build was made current since, by an operator;
 * - `replace`: an older build is current: it may replace it.
 */
export type Standing = 'already' | 'ramping' | 'first' | 'older' | 'rolled-back' | 'replace';

export function standingOf(
  ours: string,
  routing: { current?: string; ramping?: string },
  builds: WorkerBuild[],
): Standing {
  if (routing.current === ours) return 'already';
  if (routing.ramping) return 'ramping';
  if (!routing.current) return 'first';
  const own = builds.find((b) => b.buildId === ours);
  const current = builds.find((b) => b.buildId === routing.current);
  if (own && current && current.order > own.order) return 'older';
  if (own?.wasCurrent) return 'rolled-back';
  return 'replace';
}

/** The Temporal CLI commands an operator runs to promote `version`, or to ramp it first. */
export function promotionCommands(
  target: { address: string; namespace: string },
  version: WorkerDeploymentVersion,
) {
  const base = `temporal worker deployment %s --address ${target.address} --namespace ${target.namespace} --deployment-name ${version.deploymentName} --build-id ${version.buildId}`;
  return {
    setCurrent: base.replace('%s', 'set-current-version'),
    ramp: `${base.replace('%s', 'set-ramping-version')} --percentage 10`,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The deployment's current and ramping build, and the token that changes them (NotFound before its first poll). */
async function describeRouting(connection: NativeConnection, namespace: string, deploymentName: string) {
  const { workerDeploymentInfo: deployment, conflictToken } =
    await connection.workflowService.describeWorkerDeployment({ namespace, deploymentName });
  const routing = deployment?.routingConfig;
  return {
    current: routing?.currentDeploymentVersion?.buildId || undefined,
    ramping: routing?.rampingDeploymentVersion?.buildId || undefined,
    conflictToken,
  };
}

/** Throws until the server has seen pollers of `version` on every one of `taskQueues`. */
async function pollersSeen(
  connection: NativeConnection,
  namespace: string,
  version: WorkerDeploymentVersion,
  taskQueues: string[],
): Promise<void> {
  const { workerDeploymentVersionInfo: info } =
    await connection.workflowService.describeWorkerDeploymentVersion({
      namespace,
      deploymentVersion: version,
    });
  const seen = new Set((info?.taskQueueInfos ?? []).map((q) => q.name));
  const missing = taskQueues.filter((q) => !seen.has(q));
  if (missing.length) throw new Error(`no pollers seen yet on ${missing.join(', ')}`);
}

/** What start-up did about the version: its standing, or why a build that could have was held back. */
export type Promotion = Standing | 'not-replayed' | 'awaiting-operator';

/** Why a build stays non-current, and what an operator can do about it, for the log. */
const HELD_BACK: Record<'older' | 'rolled-back' | 'ramping' | 'awaiting-operator' | 'not-replayed', string> =
  {
    older:
      'this build was not made current: the current build was first seen after it, and a build never rolls the deployment back by itself. To roll back on purpose, run the setCurrent command logged; or start this code under a new WORKER_BUILD_ID, a new release, which replays the histories the current build wrote before it becomes current',
    'rolled-back':
      'this build was not made current: it was current before, and an older build was made current since (a roll-back by an operator). The setCurrent command logged makes it current again',
    ramping:
      'this build was not made current: a version is ramping, a roll-out an operator runs by hand (`temporal worker deployment describe` shows it). The setCurrent and ramp commands logged promote this one',
    'awaiting-operator':
      'this build waits for an operator (WORKER_VERSIONING=manual, the default with --role=worker): from its checkout, check it with `npm run upgrade:check` and against the cluster with `npm run upgrade:replay`, then run the setCurrent command logged, or ramp it first',
    'not-replayed':
      'this build was not made current: it does not replay the open histories named in `reason`, whose next task would fail on it. Keep the old path of the change behind patched() in a new build (docs/upgrades.md); the setCurrent command logged promotes this one regardless',
  };

/**
 * Settles this process's version at start-up: records the build in the deployment's database, takes
 * its standing, and when `standingOf` allows and `mode` leaves it to the build, makes it current once
 * the server has seen its pollers on every one of `taskQueues` (the agent queue's workflow poller and
 * all activity pollers) and `vet` (the replay of the open histories) finds no reason against it. A
 * held-back build logs why and returns at once. Until a version is current, a versioned deployment's
 * tasks go nowhere, so start-up waits for this.
 */
export async function makeVersionCurrent(options: {
  connection: NativeConnection;
  db: Queryable;
  namespace: string;
  version: WorkerDeploymentVersion;
  mode: VersioningMode;
  taskQueues: string[];
  timeoutMs: number;
  log: Logger;
  /** Why this build must not become current, if it must not. */
  vet: () => Promise<string | undefined>;
  /** The commands an operator runs instead, for the log. */
  commands: ReturnType<typeof promotionCommands>;
}): Promise<Promotion> {
  const { connection, db, namespace, version, log } = options;
  const deployment = version.deploymentName;
  const about = { deployment, buildId: version.buildId, versioning: options.mode };
  await recordWorkerBuild(db, deployment, version.buildId);
  let deadline = Date.now() + options.timeoutMs;
  let vetted = false;
  let lastError = 'the deployment is not known yet';
  for (let attempt = 0; ; attempt++) {
    if (Date.now() > deadline)
      throw new Error(
        `could not make worker deployment version ${deployment}.${version.buildId} current within ${options.timeoutMs} ms: ${lastError}`,
      );
    if (attempt) await sleep(Math.min(50 * 2 ** attempt, 1_000));
    try {
      const routing = await describeRouting(connection, namespace, deployment);
      const { current, ramping, conflictToken } = routing;
      if (current) await markWorkerBuildCurrent(db, deployment, current);
      const standing = standingOf(version.buildId, routing, await workerBuilds(db, deployment));
      if (standing === 'already') return standing;
      const held = (why: keyof typeof HELD_BACK, reason?: string) => {
        log.warn(
          { ...about, current: current ?? null, ramping, reason, ...options.commands },
          HELD_BACK[why],
        );
        return why;
      };
      if (standing === 'older' || standing === 'rolled-back' || standing === 'ramping') return held(standing);
      if (standing === 'replace' && options.mode === 'manual') return held('awaiting-operator');
      // Only a version whose pollers the server has seen on every queue can become current.
      await pollersSeen(connection, namespace, version, options.taskQueues);
      if (!vetted) {
        const reason = await options.vet();
        if (reason) return held('not-replayed', reason);
        // The replay took a while: the deployment is described again, for a fresh standing and token.
        vetted = true;
        deadline = Date.now() + options.timeoutMs;
        continue;
      }
      const { previousDeploymentVersion: previous } =
        await connection.workflowService.setWorkerDeploymentCurrentVersion({
          namespace,
          deploymentName: deployment,
          buildId: version.buildId,
          conflictToken,
          identity: `letta-temporal ${version.buildId}`,
        });
      await markWorkerBuildCurrent(db, deployment, version.buildId);
      log.info({ ...about, previous: previous?.buildId || null }, 'worker deployment version made current');
      return standing;
    } catch (error) {
      // NotFound until the deployment's first poll reaches the server; a conflict when another
      // replica changed the routing first: the standing is taken again.
      lastError = errorText(error);
    }
  }
}
