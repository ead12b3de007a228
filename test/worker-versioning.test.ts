import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, type WorkflowHandle } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import pino from 'pino';
import { openDatabase } from '../src/db';
import type { temporal } from '@temporalio/proto';
import { startServer, type Role, type RunningServer } from '../src/server';
import { resolveTemporalBinary } from '../src/temporal/cli-binary';
import type { RunningDevServer } from '../src/temporal/dev-server';
import {
  LONG_LIVED_TYPES,
  oldestOfEach,
  sampleExecutions,
  type SampledExecution,
} from '../src/temporal/replay-sample';
import { taskQueues } from '../src/temporal/task-queues';
import { loadDeploymentId } from '../src/db/deployment';
import { version as packageVersion } from '../src/paths';
import {
  deploymentName,
  gitCommit,
  promotionCommands,
  standingOf,
  versioningMode,
  workerBuildId,
} from '../src/temporal/versioning';
import * as workflows from '../workflows';
import { smokeActivities } from './fixtures/smoke-activities';
import { answerSignal, waitForAnswer } from './fixtures/versioned-workflow';
import { eventually } from './helpers/eventually';
import { freePort, silentLogger, testConfig, testTemporalAddress, uniqueSuffix } from './helpers/env';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { startTemporalServer } from './helpers/temporal-server';

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

  it('becomes current when none is or an older one is, and never rolls the deployment back', () => {
    const builds = [
      { buildId: 'b1', order: 1, wasCurrent: true },
      { buildId: 'b2', order: 2, wasCurrent: true },
      { buildId: 'b3', order: 3, wasCurrent: false },
    ];
    expect(standingOf('b3', {}, builds)).toBe('first');
    expect(standingOf('b3', { current: 'b2' }, builds)).toBe('replace');
    expect(standingOf('b3', { current: 'b3' }, builds)).toBe('already');
    // An older replica restarting during or after a roll-out does not take the deployment back.
    expect(standingOf('b1', { current: 'b2' }, builds)).toBe('older');
    expect(standingOf('b2', { current: 'b3' }, builds)).toBe('older');
    // b2 was current and an operator made b1 current again: b2 restarting leaves it so.
    expect(standingOf('b2', { current: 'b1' }, builds)).toBe('rolled-back');
    // A current build the database never recorded ran before the record existed: it is older.
    expect(standingOf('b3', { current: 'from-before' }, builds)).toBe('replace');
    // A build not recorded yet is the newest.
    expect(standingOf('b4', { current: 'b3' }, builds)).toBe('replace');
    // An operator ramping a version runs the roll-out.
    expect(standingOf('b3', { current: 'b2', ramping: 'b3' }, builds)).toBe('ramping');
  });

  it('leaves replacing a version to an operator in a worker-only process, unless told', () => {
    expect(versioningMode(undefined, 'all')).toBe('replay');
    expect(versioningMode(undefined, 'worker')).toBe('manual');
    expect(versioningMode('replay', 'worker')).toBe('replay');
    expect(versioningMode('manual', 'all')).toBe('manual');
  });

  it('samples the oldest open executions of every version, the oldest first, up to the limit', () => {
    const at = (version: string, seconds: number): SampledExecution => ({
      workflowId: `${version}-${seconds}`,
      runId: 'r',
      type: 'agentTurn',
      version,
      open: true,
      startTime: new Date(seconds * 1000),
    });
    const v1 = [at('v1', 7), at('v1', 5), at('v1', 6)];
    const v2 = [at('v2', 9), at('v2', 1)];
    const v3 = [at('v3', 3)];
    const ids = (limit: number) => oldestOfEach([v1, v2, v3], limit).map((e) => e.workflowId);
    expect(ids(1)).toEqual(['v2-1']);
    expect(ids(3)).toEqual(['v2-1', 'v3-3', 'v1-5']);
    expect(ids(4)).toEqual(['v2-1', 'v3-3', 'v1-5', 'v2-9']);
    expect(ids(10)).toEqual(['v2-1', 'v3-3', 'v1-5', 'v1-6', 'v1-7', 'v2-9']);
  });

  it('names the Temporal CLI commands that promote it or ramp it by hand', () => {
    const version = { deploymentName: 'prod-a1b2', buildId: '0.1.0+abc' };
    expect(promotionCommands({ address: 'temporal:7233', namespace: 'agents' }, version)).toEqual({
      setCurrent:
        'temporal worker deployment set-current-version --address temporal:7233 --namespace agents --deployment-name prod-a1b2 --build-id 0.1.0+abc',
      ramp: 'temporal worker deployment set-ramping-version --address temporal:7233 --namespace agents --deployment-name prod-a1b2 --build-id 0.1.0+abc --percentage 10',
    });
  });

  it('replays every workflow type the agent worker runs before a build becomes current', () => {
    expect([...LONG_LIVED_TYPES].sort()).toEqual(Object.keys(workflows).sort());
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until the run has completed `count` workflow tasks (a paused turn's first ones). */
async function tasksDone(handle: WorkflowHandle, count: number): Promise<void> {
  while ((await taskBuildIds(handle)).length < count) await sleep(100);
}

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** A logger that keeps its lines, for what start-up says about its version. */
function recordingLogger() {
  const lines: LogLine[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });
  return { log, lines };
}

/** Answers the paused run `workflowId` through `server`; its result: the build that finished it. */
async function answeredOn(server: RunningServer, workflowId: string): Promise<string> {
  const handle = new Client({ connection: server.connection }).workflow.getHandle(workflowId);
  await handle.signal(answerSignal);
  return handle.result();
}

/** Runs a command the start-up log printed for an operator, with the CLI, confirming its prompt. */
async function runLoggedCommand(command: string): Promise<void> {
  const binary = await resolveTemporalBinary(process.env.TEMPORAL_CLI_PATH, silentLogger());
  const [program, ...args] = command.split(' ');
  expect(program).toBe('temporal');
  execFileSync(binary!.path, [...args, '--yes'], { stdio: 'pipe' });
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
  const start = async (
    env: Record<string, string>,
    db = schema,
    workflows = 'versioned-workflow',
    { role = 'all', log = silentLogger() }: { role?: Role; log?: pino.Logger } = {},
  ) => {
    const server = await startServer(await config(env, db), log, {
      role,
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
  const describeDeployment = (server: RunningServer) =>
    server.connection.workflowService.describeWorkerDeployment({
      namespace: 'default',
      deploymentName: server.workerVersion!.deploymentName,
    });
  const currentBuildId = async (server: RunningServer) =>
    (await describeDeployment(server)).workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId;
  const listedVersions = async (server: RunningServer) =>
    (
      (await describeDeployment(server).catch(() => undefined))?.workerDeploymentInfo?.versionSummaries ?? []
    ).map((v) => ({ buildId: v.deploymentVersion?.buildId, created: Number(v.createTime?.seconds ?? 0) }));
  /** A server that promotes nothing does not wait for its version to be listed: the test does. */
  const waitForListedVersion = async (server: RunningServer, buildId: string) => {
    const listed = await eventually(
      () => listedVersions(server),
      (versions) => versions.some((v) => v.buildId === buildId),
    );
    expect(listed.map((v) => v.buildId)).toContain(buildId);
  };
  const agentQueue = async (server: RunningServer) =>
    taskQueues(prefix, await loadDeploymentId(server.db)).agent;
  /** The warning start-up logged about holding its build back, with the commands an operator runs. */
  const heldBack = (lines: LogLine[]) => lines.find((line) => line.level === 40 && 'setCurrent' in line);

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
      if (!info?.deploymentVersion) await sleep(100);
    }
    expect(info?.deploymentVersion).toEqual({ deploymentName: `${prefix}${deploymentId}`, buildId: 'v1' });
    expect(info?.behavior).toBe(2); // VERSIONING_BEHAVIOR_AUTO_UPGRADE
    expect(await taskBuildIds(handle)).toEqual(['v1']);

    // The release is replaced in place: v1 stops, v2 starts and makes itself current.
    await stop(first);
    const second = await start({ WORKER_BUILD_ID: 'v2' });
    expect(await currentBuildId(second)).toBe('v2');
    expect(await answeredOn(second, handle.workflowId)).toBe('v2');
    const answered = new Client({ connection: second.connection }).workflow.getHandle(handle.workflowId);
    expect(await taskBuildIds(answered)).toEqual(['v1', 'v2']);

    // An old replica that restarts meanwhile does not take the deployment back.
    const { log, lines } = recordingLogger();
    const stale = await start({ WORKER_BUILD_ID: 'v1' }, schema, 'versioned-workflow', { log });
    expect(await currentBuildId(stale)).toBe('v2');
    const warning = heldBack(lines)!;
    expect(warning.msg).toMatch(/the current build was first seen after it/);

    // A roll-back on purpose: the operator runs the command logged; a v2 replica restarting leaves it.
    await runLoggedCommand(warning.setCurrent as string);
    expect(await currentBuildId(stale)).toBe('v1');
    const restarted = recordingLogger();
    const replica = await start({ WORKER_BUILD_ID: 'v2' }, schema, 'versioned-workflow', {
      log: restarted.log,
    });
    expect(await currentBuildId(replica)).toBe('v1');
    expect(heldBack(restarted.lines)?.msg).toMatch(
      /it was current before, and an older build was made current since/,
    );
    for (const server of [stale, second, replica]) await stop(server);
  });

  it('holds back a build that cannot replay the oldest paused turn, however many newer ones there are', async () => {
    const released = await start({ WORKER_BUILD_ID: 'r1' });
    expect(await currentBuildId(released)).toBe('r1');
    const client = new Client({ connection: released.connection });
    const taskQueue = await agentQueue(released);
    const oldest = await client.workflow.start('agentTurn', {
      taskQueue,
      workflowId: `turn-oldest-${uniqueSuffix()}`,
    });
    await tasksDone(oldest, 2); // paused after its timer
    // Sixty newer turns, paused without a timer: every build replays them.
    const newer = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        client.workflow.start('agentTurn', {
          taskQueue,
          workflowId: `turn-newer-${i}-${uniqueSuffix()}`,
          args: [{ timer: false }],
        }),
      ),
    );
    // A sample of ten holds the oldest of the 61 open turns.
    const sample = await eventually(
      () =>
        sampleExecutions({ client, openPerType: 10, closedPerType: 0, where: `TaskQueue = "${taskQueue}"` }),
      ({ counts }) => counts.agentTurn.open === 61,
    );
    expect(sample.counts.agentTurn).toMatchObject({ open: 61, sampledOpen: 10 });
    expect(sample.executions.map((e) => e.workflowId)).toContain(oldest.workflowId);
    await stop(released);

    const { log, lines } = recordingLogger();
    const broken = await start(
      { WORKER_BUILD_ID: 'r2', WORKER_REPLAY_OPEN_MAX: '10' },
      schema,
      'changed-versioned-workflow',
      { log },
    );
    expect(await currentBuildId(broken)).toBe('r1');
    const warning = heldBack(lines);
    expect(warning?.msg).toMatch(/does not replay the open histories/);
    expect(warning?.reason).toMatch(new RegExp(`agentTurn ${oldest.workflowId} .*Nondeterminism`));
    expect(warning?.setCurrent).toBe(
      promotionCommands({ address: testTemporalAddress(), namespace: 'default' }, broken.workerVersion!)
        .setCurrent,
    );
    await stop(broken);

    const fixed = await start({ WORKER_BUILD_ID: 'r3', WORKER_REPLAY_OPEN_MAX: '10' });
    expect(await currentBuildId(fixed)).toBe('r3');
    expect(await answeredOn(fixed, oldest.workflowId)).toBe('r3');
    // The newer turns would only lengthen the next tests' replays.
    const terminate = new Client({ connection: fixed.connection }).workflow;
    await Promise.all(newer.map((handle) => terminate.getHandle(handle.workflowId).terminate()));
    await stop(fixed);
  });

  it('holds back a build that cannot replay a running webhook delivery', async () => {
    const released = await start({ WORKER_BUILD_ID: 'd1' });
    const client = new Client({ connection: released.connection });
    const delivery = await client.workflow.start('webhookDelivery', {
      taskQueue: await agentQueue(released),
      workflowId: `webhook-${uniqueSuffix()}`,
    });
    await tasksDone(delivery, 2);
    await stop(released);

    const broken = await start({ WORKER_BUILD_ID: 'd2' }, schema, 'changed-delivery-workflow');
    expect(await currentBuildId(broken)).toBe('d1');
    await stop(broken);

    const fixed = await start({ WORKER_BUILD_ID: 'd3' });
    expect(await currentBuildId(fixed)).toBe('d3');
    expect(await answeredOn(fixed, delivery.workflowId)).toBe('d3');
    await stop(fixed);
  });

  it('leaves replacing a version to an operator with --role=worker, unless told', async () => {
    const other = await createTestSchema();
    try {
      // A first version becomes current by itself: nothing can be stranded, skipped or rolled back.
      const first = await start({ WORKER_BUILD_ID: 'w1' }, other, 'versioned-workflow', { role: 'worker' });
      expect(await currentBuildId(first)).toBe('w1');

      const { log, lines } = recordingLogger();
      const second = await start({ WORKER_BUILD_ID: 'w2' }, other, 'versioned-workflow', {
        role: 'worker',
        log,
      });
      await waitForListedVersion(second, 'w2');
      expect(await currentBuildId(second)).toBe('w1');
      const warning = heldBack(lines)!;
      expect(warning.msg).toMatch(/waits for an operator .*npm run upgrade:replay/);
      expect(warning.setCurrent).toBe(
        `temporal worker deployment set-current-version --address ${testTemporalAddress()} --namespace default --deployment-name ${second.workerVersion!.deploymentName} --build-id w2`,
      );
      // The operator runs the command logged.
      await runLoggedCommand(warning.setCurrent as string);
      expect(await currentBuildId(second)).toBe('w2');

      const third = await start(
        { WORKER_BUILD_ID: 'w3', WORKER_VERSIONING: 'replay' },
        other,
        'versioned-workflow',
        {
          role: 'worker',
        },
      );
      expect(await currentBuildId(third)).toBe('w3');
      for (const server of [first, second, third]) await stop(server);
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
        await tasksDone(started, 1);
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

  describe('after Temporal forgets a version (delete-version)', () => {
    let dataDir: string;
    let cluster: RunningDevServer;
    const onCluster = (env: Record<string, string>) => ({ ...env, TEMPORAL_ADDRESS: cluster.address });

    beforeAll(async () => {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-versioning-'));
      // Temporal deletes a version only once its pollers have aged out of its history (five minutes).
      ({ server: cluster } = await startTemporalServer(dataDir, ['matching.PollerHistoryTTL="1s"']));
    });
    afterAll(async () => {
      await cluster?.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it('never makes an older build current again by itself', async () => {
      const other = await createTestSchema();
      try {
        const v1 = await start(onCluster({ WORKER_BUILD_ID: 'o1' }), other);
        const v2 = await start(onCluster({ WORKER_BUILD_ID: 'o2' }), other);
        expect(await currentBuildId(v2)).toBe('o2');
        await stop(v1);
        const { workflowService } = v2.connection;
        const deleted = await eventually(
          () =>
            workflowService
              .deleteWorkerDeploymentVersion({
                namespace: 'default',
                deploymentVersion: { deploymentName: v2.workerVersion!.deploymentName, buildId: 'o1' },
                skipDrainage: true,
              })
              .then(() => true)
              .catch(() => false),
          (done) => done,
          60_000,
        );
        expect(deleted).toBe(true);
        expect((await listedVersions(v2)).map((v) => v.buildId)).toEqual(['o2']);

        // An o1 replica restarts: Temporal sees o1 as a version newer than o2, the database knows better.
        const { log, lines } = recordingLogger();
        const stale = await start(onCluster({ WORKER_BUILD_ID: 'o1' }), other, 'versioned-workflow', { log });
        await waitForListedVersion(stale, 'o1');
        const versions = await listedVersions(stale);
        expect(versions.find((v) => v.buildId === 'o1')!.created).toBeGreaterThanOrEqual(
          versions.find((v) => v.buildId === 'o2')!.created,
        );
        expect(await currentBuildId(stale)).toBe('o2');
        expect(heldBack(lines)!.msg).toMatch(/first seen after it.*under a new WORKER_BUILD_ID/);

        // The way back the log names: the older code under a new build id, a new release.
        const again = await start(onCluster({ WORKER_BUILD_ID: 'o3' }), other);
        expect(await currentBuildId(again)).toBe('o3');
        for (const server of [v2, stale, again]) await stop(server);
      } finally {
        await other.drop();
      }
    });
  });
});
