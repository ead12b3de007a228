import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { NativeConnection, WorkerDeploymentOptions } from '@temporalio/worker';
import type { Logger } from '../logger';
import { projectRoot, version as packageVersion } from '../paths';
import { errorText } from './connection';

/**
 * Worker versioning (Temporal Worker Deployments). Every worker of this server registers one
 * deployment version: the deployment is this server's deployment (its task-queue prefix and id, the
 * names its task queues carry), the build id its release. The server routes a workflow's tasks to the
 * deployment's current version, and each workflow type declares whether a run stays on the version
 * that started it (PINNED) or moves to the current one at its next task (AUTO_UPGRADE): see the
 * `setWorkflowOptions` call beside each workflow, and the README's "Upgrades".
 *
 * `WORKER_VERSIONING`:
 * - `auto` (default): at start-up the server makes its own version current once its workers poll,
 *   unless another version of the deployment was first seen after it (a newer release is rolling out:
 *   an old replica that restarts must not take the traffic back).
 * - `manual`: an operator makes a version current (`temporal worker deployment set-current-version`,
 *   or a ramp): blue-green roll-outs.
 *
 * There is no unversioned mode: a workflow that declares its behaviour cannot complete a task on an
 * unversioned worker (the server refuses it: "versioning behavior cannot be specified without
 * deployment options being set with versioned mode"), so the cluster must have Worker Deployments
 * (Temporal server 1.28 or newer, or Temporal Cloud).
 */
export type VersioningMode = 'auto' | 'manual';

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

interface VersionSummary {
  buildId: string;
  /** When the server first saw a poller of this version (ms since the epoch). */
  createdMs: number;
}

/**
 * Whether this version should become current: it is not already, and no version of the deployment was
 * first seen after it. A roll-back to an older build therefore needs an operator (or a new build id).
 */
export function shouldBecomeCurrent(
  ours: string,
  current: string | undefined,
  versions: VersionSummary[],
): 'already' | 'newer-exists' | 'promote' {
  if (current === ours) return 'already';
  const own = versions.find((v) => v.buildId === ours);
  if (own && versions.some((v) => v.buildId !== ours && v.createdMs > own.createdMs)) return 'newer-exists';
  return 'promote';
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const millis = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0;

/**
 * Makes `version` the deployment's current version once the server has seen its pollers on every one
 * of `taskQueues` (the agent queue's workflow poller and all activity pollers), when it is the newest.
 * Until a version is current, a versioned deployment's tasks go nowhere, so start-up waits for this.
 */
export async function makeVersionCurrent(options: {
  connection: NativeConnection;
  namespace: string;
  version: WorkerDeploymentVersion;
  taskQueues: string[];
  timeoutMs: number;
  log: Logger;
}): Promise<'already' | 'newer-exists' | 'promote'> {
  const { connection, namespace, version, log } = options;
  const service = connection.workflowService;
  const deadline = Date.now() + options.timeoutMs;
  let lastError = 'no pollers seen yet';
  for (let attempt = 0; ; attempt++) {
    if (Date.now() > deadline)
      throw new Error(
        `could not make worker deployment version ${version.deploymentName}.${version.buildId} current within ${options.timeoutMs} ms: ${lastError}`,
      );
    if (attempt) await sleep(Math.min(50 * 2 ** attempt, 1_000));
    try {
      const { workerDeploymentVersionInfo: info } = await service.describeWorkerDeploymentVersion({
        namespace,
        deploymentVersion: version,
      });
      const seen = new Set((info?.taskQueueInfos ?? []).map((q) => q.name));
      const missing = options.taskQueues.filter((q) => !seen.has(q));
      if (missing.length) {
        lastError = `no pollers seen yet on ${missing.join(', ')}`;
        continue;
      }
      const { workerDeploymentInfo: deployment, conflictToken } = await service.describeWorkerDeployment({
        namespace,
        deploymentName: version.deploymentName,
      });
      const decision = shouldBecomeCurrent(
        version.buildId,
        deployment?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined,
        (deployment?.versionSummaries ?? []).map((v) => ({
          buildId: v.deploymentVersion?.buildId ?? '',
          createdMs: millis(v.createTime),
        })),
      );
      if (decision === 'promote') {
        const { previousDeploymentVersion: previous } = await service.setWorkerDeploymentCurrentVersion({
          namespace,
          deploymentName: version.deploymentName,
          buildId: version.buildId,
          conflictToken,
          identity: `letta-temporal ${version.buildId}`,
        });
        log.info(
          {
            deployment: version.deploymentName,
            buildId: version.buildId,
            previous: previous?.buildId || null,
          },
          'worker deployment version made current',
        );
      } else if (decision === 'newer-exists') {
        log.warn(
          {
            deployment: version.deploymentName,
            buildId: version.buildId,
            current: deployment?.routingConfig?.currentDeploymentVersion?.buildId,
          },
          'a newer version of this deployment exists: this one was not made current (temporal worker deployment set-current-version does it by hand)',
        );
      }
      return decision;
    } catch (error) {
      // NotFound until the first poll reaches the server; a conflict when another replica set it first.
      lastError = errorText(error);
    }
  }
}
