import { Client, type WorkflowHandle } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { openDatabase } from '../src/db';
import type { temporal } from '@temporalio/proto';
import { startServer, type RunningServer } from '../src/server';
import { taskQueues } from '../src/temporal/task-queues';
import { loadDeploymentId } from '../src/db/deployment';
import { version as packageVersion } from '../src/paths';
import {
  deploymentName,
  gitCommit,
  promotionCommands,
  shouldBecomeCurrent,
  workerBuildId,
} from '../src/temporal/versioning';
import * as workflows from '../workflows';
import { smokeActivities } from './fixtures/smoke-activities';
import { answerSignal, waitForAnswer } from './fixtures/versioned-workflow';
import { freePort, silentLogger, testConfig, testTemporalAddress, uniqueSuffix } from './helpers/env';
import { createTestSchema, type TestSchema } from './helpers/postgres';

describe('the deployment version', () => {
  it('is named after the deployment, never with a dot, and built from the release', () => {
    expect(deploymentName('', 'a1b2c3d4e5f6')).toBe('a1b2c3d4e5f6');
    expect(deploymentName('prod.eu-', 'a1b2c3d4e5f6')).toBe('prod-eu-a1b2c3d4e5f6');
    expect(deploymentName('prod.', '')).toBe('prod');
    expect(deploymentName('', '')).toBe('letta-temporal');
    expect(workerBuildId('2026-11-25.1', 'abc')).toBe('2026-11-25.1');
    expect(workerBuildId(undefined, '0123456789ab')).toBe(`${packageVersion}+0123456789ab`);
    expect(workerBuildId(undefined, undefined)).toBe(packageVersion);
    // This repository is a git work tree: the commit is known (a copy without .git has none).
    expect(gitCommit()).toMatch(/^[0-9a-f]{12}$/);
  });

  it('becomes current when no version is, replaces the current one only when it is the newest', () => {
    const versions = [
      { buildId: 'old', createdMs: 1_000 },
      { buildId: 'new', createdMs: 2_000 },
    ];
    expect(shouldBecomeCurrent('new', undefined, versions)).toBe('first');
    expect(shouldBecomeCurrent('new', 'old', versions)).toBe('replace');
    expect(shouldBecomeCurrent('new', 'new', versions)).toBe('already');
    // An old replica restarting during a roll-out does not take the traffic back.
    expect(shouldBecomeCurrent('old', 'new', versions)).toBe('newer-exists');
    // Not yet listed (its pollers were just seen): it is the newest.
    expect(shouldBecomeCurrent('newest', 'new', versions)).toBe('replace');
  });

  it('names the Temporal CLI commands that promote it or ramp it by hand', () => {
    const version = { deploymentName: 'prod-a1b2', buildId: '0.1.0+abc' };
    expect(promotionCommands({ address: 'temporal:7233', namespace: 'agents' }, version)).toEqual({
      setCurrent:
        'temporal worker deployment set-current-version --address temporal:7233 --namespace agents --deployment-name prod-a1b2 --build-id 0.1.0+abc',
      ramp: 'temporal worker deployment set-ramping-version --address temporal:7233 --namespace agents --deployment-name prod-a1b2 --build-id 0.1.0+abc --percentage 10',
    });
  });

  it('is chosen by every workflow type the agent worker runs', () => {
    for (const [name, fn] of Object.entries(workflows)) {
      const behaviour = (fn as { workflowDefinitionOptions?: { versioningBehavior?: string } })
        .workflowDefinitionOptions?.versioningBehavior;
      expect([name, behaviour]).toEqual([name, expect.stringMatching(/^(PINNED|AUTO_UPGRADE)$/)]);
    }
  });
});

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
/** The build id each completed workflow task names, in order: what the Temporal UI shows per task. */
async function taskBuildIds(handle: WorkflowHandle): Promise<string[]> {
  const { events } = await handle.fetchHistory();
  return (events ?? [])
    .map((e: HistoryEvent) => e.workflowTaskCompletedEventAttributes)
    .filter((a) => a != null)
    .map((a) => a.deploymentVersion?.buildId ?? '');
}

describe('worker versioning on the real Temporal server', () => {
  let schema: TestSchema;
  const servers: RunningServer[] = [];
  const prefix = `ver-${uniqueSuffix()}-`;
  const config = async (env: Record<string, string>, db = schema) =>
    testConfig({
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TASK_QUEUE_PREFIX: prefix,
      PORT: String(await freePort()),
      ...env,
    });
  const start = async (env: Record<string, string>, db = schema, workflows = 'versioned-workflow') => {
    const server = await startServer(await config(env, db), silentLogger(), {
      workflowsPath: require.resolve(`./fixtures/${workflows}`),
      activities: ({ db }) => smokeActivities(db),
    });
    servers.push(server);
    return server;
  };
  const stop = async (server: RunningServer) => {
    servers.splice(servers.indexOf(server), 1);
    await server.stop();
  };
  const currentBuildId = async (server: RunningServer) => {
    const { workerDeploymentInfo } = await server.connection.workflowService.describeWorkerDeployment({
      namespace: 'default',
      deploymentName: server.workerVersion!.deploymentName,
    });
    return workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId;
  };

  const waitForListedVersion = async (server: RunningServer, buildId: string) => {
    for (let i = 0; i < 100; i++) {
      const listed = await server.connection.workflowService
        .describeWorkerDeployment({
          namespace: 'default',
          deploymentName: server.workerVersion!.deploymentName,
        })
        .then(({ workerDeploymentInfo }) => workerDeploymentInfo?.versionSummaries ?? [])
        .catch(() => []);
      if (listed.some((v) => v.deploymentVersion?.buildId === buildId)) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`version ${buildId} never listed`);
  };

  beforeAll(async () => {
    schema = await createTestSchema();
  });
  afterAll(async () => {
    for (const server of servers.splice(0)) await server.stop();
    await schema?.drop();
  });

  it('names its version on the run, and a paused run finishes on the release that replaced it', async () => {
    const first = await start({ WORKER_BUILD_ID: 'v1' });
    const deploymentId = await loadDeploymentId(first.db);
    expect(first.workerVersion).toEqual({ deploymentName: `${prefix}${deploymentId}`, buildId: 'v1' });
    expect(await currentBuildId(first)).toBe('v1');

    const client = new Client({ connection: first.connection });
    const handle = await client.workflow.start(waitForAnswer, {
      taskQueue: taskQueues(prefix, deploymentId).agent,
      workflowId: `wait-${uniqueSuffix()}`,
    });
    // Paused under v1: describe() (the UI's workflow page) names the deployment version and behaviour.
    let info: temporal.api.workflow.v1.IWorkflowExecutionVersioningInfo | null | undefined;
    for (let i = 0; i < 100 && !info?.deploymentVersion; i++) {
      info = (await handle.describe()).raw.workflowExecutionInfo?.versioningInfo;
      if (!info?.deploymentVersion) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(info?.deploymentVersion).toEqual({ deploymentName: `${prefix}${deploymentId}`, buildId: 'v1' });
    expect(info?.behavior).toBe(2); // VERSIONING_BEHAVIOR_AUTO_UPGRADE
    expect(await taskBuildIds(handle)).toEqual(['v1']);

    // The release is replaced in place: v1 stops, v2 starts and makes itself current.
    await stop(first);
    const second = await start({ WORKER_BUILD_ID: 'v2' });
    expect(await currentBuildId(second)).toBe('v2');
    const resumed = new Client({ connection: second.connection }).workflow.getHandle(handle.workflowId);
    await resumed.signal(answerSignal);
    expect(await resumed.result()).toBe('v2');
    expect(await taskBuildIds(resumed)).toEqual(['v1', 'v2']);

    // An old replica that restarts meanwhile does not take the deployment back.
    const stale = await start({ WORKER_BUILD_ID: 'v1' });
    expect(await currentBuildId(stale)).toBe('v2');
    await stop(stale);
    await stop(second);
  });

  it('holds back a build that cannot replay a running turn; the next build that can becomes current', async () => {
    const released = await start({ WORKER_BUILD_ID: 'r1' });
    expect(await currentBuildId(released)).toBe('r1');
    const handle = await new Client({ connection: released.connection }).workflow.start('agentTurn', {
      taskQueue: taskQueues(prefix, await loadDeploymentId(released.db)).agent,
      workflowId: `turn-${uniqueSuffix()}`,
    });
    // Paused after its timer: two workflow tasks done.
    while ((await taskBuildIds(handle)).length < 2) await new Promise((resolve) => setTimeout(resolve, 100));
    await stop(released);

    const broken = await start({ WORKER_BUILD_ID: 'r2' }, schema, 'changed-versioned-workflow');
    expect(await currentBuildId(broken)).toBe('r1');
    await stop(broken);

    const fixed = await start({ WORKER_BUILD_ID: 'r3' });
    expect(await currentBuildId(fixed)).toBe('r3');
    const resumed = new Client({ connection: fixed.connection }).workflow.getHandle(handle.workflowId);
    await resumed.signal(answerSignal);
    expect(await resumed.result()).toBe('r3');
    await stop(fixed);
  });

  it('never promotes a build with WORKER_VERSIONING=manual, not even the first', async () => {
    const other = await createTestSchema();
    try {
      const server = await start({ WORKER_BUILD_ID: 'm1', WORKER_VERSIONING: 'manual' }, other);
      // The server does not wait for its version to be listed (nothing is promoted): wait here,
      // so the check below reads a deployment that knows m1.
      await waitForListedVersion(server, 'm1');
      expect(await currentBuildId(server)).toBeUndefined();
      await stop(server);
    } finally {
      await other.drop();
    }
  });

  it('takes over a run an unversioned release started (the upgrade from before versioning)', async () => {
    const other = await createTestSchema();
    const connection = await NativeConnection.connect({ address: testTemporalAddress() });
    try {
      const db = await openDatabase(await config({}, other), silentLogger());
      const taskQueue = taskQueues(prefix, await loadDeploymentId(db)).agent;
      await db.close();
      // The release before: a worker without a deployment version, on the deployment's task queue.
      const old = await Worker.create({
        connection,
        taskQueue,
        workflowsPath: require.resolve('./fixtures/unversioned-workflow'),
      });
      const handle = await old.runUntil(async () => {
        const started = await new Client({ connection }).workflow.start(waitForAnswer, {
          taskQueue,
          workflowId: `unversioned-${uniqueSuffix()}`,
        });
        while ((await taskBuildIds(started)).length === 0)
          await new Promise((resolve) => setTimeout(resolve, 100));
        return started;
      });
      expect(await taskBuildIds(handle)).toEqual(['']);

      const server = await start({ WORKER_BUILD_ID: 'after' }, other);
      await handle.signal(answerSignal);
      expect(await handle.result()).toBe('after');
      await stop(server);
    } finally {
      await connection.close();
      await other.drop();
    }
  });
});
