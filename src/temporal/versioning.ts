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
 * `setWorkflowOptions` call beside each workflow, and docs/upgrades.md.
 *
 * `WORKER_VERSIONING`:
 * - `replay` (default): at start-up the server makes its own version current once its workers poll,
 *   when nothing can be stranded by it: when the deployment has no current version (a first start),
 *   or when this build replays a sample of the deployment's running and recent turn and session
 *   histories (src/temporal/replay-sample.ts; a server replaced in place passes it). A build that
 *   does not replay them stays non-current and logs why, with the commands that promote or ramp it
 *   by hand. A version of the deployment first seen after this one (a newer release rolling out)
 *   keeps it non-current too: an old replica that restarts must not take the traffic back.
 * - `manual`: never; an operator makes a version current (`temporal worker deployment
 *   set-current-version`) or ramps it (`set-ramping-version`): blue-green roll-outs.
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

interface VersionSummary {
  buildId: string;
  /** When the server first saw a poller of this version (ms since the epoch). */
  createdMs: number;
}

/**
 * Whether this version should become current: not when it is already, nor when a version of the
 * deployment was first seen after it (a roll-back to an older build needs an operator, or a new build
 * id); at once when no version is current (`first`: no run of the deployment can be stranded); once
 * it has replayed the current version's histories otherwise (`replace`).
 */
export function shouldBecomeCurrent(
  ours: string,
  current: string | undefined,
  versions: VersionSummary[],
): 'already' | 'newer-exists' | 'first' | 'replace' {
  if (current === ours) return 'already';
  const own = versions.find((v) => v.buildId === ours);
  if (own && versions.some((v) => v.buildId !== ours && v.createdMs > own.createdMs)) return 'newer-exists';
  return current ? 'replace' : 'first';
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
const millis = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0;

/** Where the deployment stands for `version`: what it should do, and the token to do it with. */
async function describeStanding(
  connection: NativeConnection,
  namespace: string,
  version: WorkerDeploymentVersion,
  taskQueues: string[],
) {
  const service = connection.workflowService;
  const { workerDeploymentVersionInfo: info } = await service.describeWorkerDeploymentVersion({
    namespace,
    deploymentVersion: version,
  });
  const seen = new Set((info?.taskQueueInfos ?? []).map((q) => q.name));
  const missing = taskQueues.filter((q) => !seen.has(q));
  if (missing.length) throw new Error(`no pollers seen yet on ${missing.join(', ')}`);
  const { workerDeploymentInfo: deployment, conflictToken } = await service.describeWorkerDeployment({
    namespace,
    deploymentName: version.deploymentName,
  });
  const current = deployment?.routingConfig?.currentDeploymentVersion?.buildId || undefined;
  const versions = (deployment?.versionSummaries ?? []).map((v) => ({
    buildId: v.deploymentVersion?.buildId ?? '',
    createdMs: millis(v.createTime),
  }));
  return { decision: shouldBecomeCurrent(version.buildId, current, versions), current, conflictToken };
}

export type Promotion = ReturnType<typeof shouldBecomeCurrent> | 'not-replayed';

/**
 * Makes `version` the deployment's current version once the server has seen its pollers on every one
 * of `taskQueues` (the agent queue's workflow poller and all activity pollers), when
 * `shouldBecomeCurrent` says so and, to replace another version, once `vet` (the replay of recent
 * histories) finds no reason against it. Until a version is current, a versioned deployment's tasks
 * go nowhere, so start-up waits for this.
 */
export async function makeVersionCurrent(options: {
  connection: NativeConnection;
  namespace: string;
  version: WorkerDeploymentVersion;
  taskQueues: string[];
  timeoutMs: number;
  log: Logger;
  /** Why this build must not replace the current version, if it must not. */
  vet: () => Promise<string | undefined>;
  /** The commands an operator runs instead, for the log. */
  commands: ReturnType<typeof promotionCommands>;
}): Promise<Promotion> {
  const { connection, namespace, version, log } = options;
  const about = { deployment: version.deploymentName, buildId: version.buildId };
  let deadline = Date.now() + options.timeoutMs;
  let vetted = false;
  let lastError = 'no pollers seen yet';
  for (let attempt = 0; ; attempt++) {
    if (Date.now() > deadline)
      throw new Error(
        `could not make worker deployment version ${version.deploymentName}.${version.buildId} current within ${options.timeoutMs} ms: ${lastError}`,
      );
    if (attempt) await sleep(Math.min(50 * 2 ** attempt, 1_000));
    try {
      const { decision, current, conflictToken } = await describeStanding(
        connection,
        namespace,
        version,
        options.taskQueues,
      );
      if (decision === 'replace' && !vetted) {
        const reason = await options.vet();
        if (reason) {
          log.warn(
            { ...about, current, reason, ...options.commands },
            'this build was not made current: it does not replay the histories of the running version (promote it, or ramp it, by hand with the commands logged)',
          );
          return 'not-replayed';
        }
        // The replay took a while: the deployment is described again, for a fresh conflict token.
        vetted = true;
        deadline = Date.now() + options.timeoutMs;
        continue;
      }
      if (decision === 'first' || decision === 'replace') {
        const { previousDeploymentVersion: previous } =
          await connection.workflowService.setWorkerDeploymentCurrentVersion({
            namespace,
            deploymentName: version.deploymentName,
            buildId: version.buildId,
            conflictToken,
            identity: `letta-temporal ${version.buildId}`,
          });
        log.info({ ...about, previous: previous?.buildId || null }, 'worker deployment version made current');
      } else if (decision === 'newer-exists') {
        log.warn(
          { ...about, current, ...options.commands },
          'a newer version of this deployment exists: this one was not made current (the setCurrent command logged does it by hand)',
        );
      }
      return decision;
    } catch (error) {
      // NotFound until the first poll reaches the server; a conflict when another replica set it first.
      lastError = errorText(error);
    }
  }
}
