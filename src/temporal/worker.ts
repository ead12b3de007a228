import {
  Worker,
  type NativeConnection,
  type WorkerDeploymentOptions,
  type WorkerOptions,
} from '@temporalio/worker';
import type { Tracing } from '../observability/tracing';
import { tracedActivityWorker, workflowWorkerInterceptors } from '../observability/temporal';

export interface AgentWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: object;
  /** The module whose exports are the workflows; the project's workflows/ unless a test says otherwise. */
  workflowsPath?: string;
  /**
   * How many workflows the worker keeps in memory between their tasks (the SDK's sticky cache). A
   * paused turn needs none: when its answer comes, it is replayed from its history if evicted.
   */
  maxCachedWorkflows: number;
  /** The deployment version this worker registers (src/temporal/versioning.ts); none: unversioned. */
  deployment?: WorkerDeploymentOptions;
  /** The process's tracing: workflows and activities run in spans, exported with the process's. */
  tracing?: Tracing;
  /**
   * How long the activities running when the worker shuts down may take to finish (SHUTDOWN_GRACE_MS);
   * unset: none, they are cut short at once.
   */
  shutdownGraceMs?: number;
}

/**
 * A cancelled run reaches a running model or tool call with the answer to its next heartbeat, which the
 * SDK otherwise sends at most every 80% of the heartbeat timeout (16 s by default): a cancel then took
 * that long to stop a tool. A heartbeat a second is cheap, and only long calls send more than one.
 */
const HEARTBEAT_THROTTLE = '1 second';

/**
 * How long the activities cut short when a worker's grace ends may take to stop and let go of their
 * claims (activities/tool-call.ts) before the worker stops without them: they are retried either way.
 */
export const STOPPING_MS = 5_000;

/** What every worker of the server shares: its connection, namespace, queue and deployment version. */
function commonOptions(
  options: Omit<AgentWorkerOptions, 'workflowsPath' | 'maxCachedWorkflows' | 'tracing'>,
) {
  const graceMs = options.shutdownGraceMs ?? 0;
  return {
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities: options.activities,
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
    workerDeploymentOptions: options.deployment,
    // A stop lets running calls finish, then cuts the rest short (cancelled as `workerShutdown`).
    shutdownGraceTime: graceMs,
    shutdownForceTime: graceMs + STOPPING_MS,
  } satisfies WorkerOptions;
}

/** The module whose exports are the server's workflows. */
export const WORKFLOWS_PATH = require.resolve('../../workflows');

/**
 * The `agent` task queue's worker: the session and turn workflows, the model calls and the built-in
 * tools. Workflows run as the SDK runs them by default: on its workflow threads, each activation
 * bounded by its deadlock detection, with the promise hook that answers the Temporal UI's Stack Trace
 * tab.
 */
export function createAgentWorker(options: AgentWorkerOptions): Promise<Worker> {
  return Worker.create({
    ...commonOptions(options),
    ...workflowWorkerInterceptors(options.tracing),
    workflowsPath: options.workflowsPath ?? WORKFLOWS_PATH,
    maxCachedWorkflows: options.maxCachedWorkflows,
  });
}

/** A worker for a tool pool's task queue (`tools-sandbox`, `tools-mcp`): activities only. */
export function createToolWorker(
  options: Omit<AgentWorkerOptions, 'workflowsPath' | 'maxCachedWorkflows'>,
): Promise<Worker> {
  return Worker.create({ ...commonOptions(options), ...(options.tracing && tracedActivityWorker()) });
}
