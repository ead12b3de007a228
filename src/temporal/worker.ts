import fs from 'node:fs';
import path from 'node:path';
import {
  Worker,
  type NativeConnection,
  type WorkerDeploymentOptions,
  type WorkerOptions,
} from '@temporalio/worker';

export interface AgentWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: object;
  /** The module whose exports are the workflows; the project's workflows/ unless a test says otherwise. */
  workflowsPath?: string;
  /**
   * How many workflows the worker keeps in memory between their tasks (the SDK's sticky cache). A
   * paused step needs none: when its answer comes, it is replayed from its history if evicted.
   */
  maxCachedWorkflows: number;
  /**
   * How long one activation of a workflow may run before the SDK fails its task (a loop that never
   * yields); 0: no limit. Node enforces the limit with a watchdog thread started for every entry into
   * the workflow's V8 context, several per activation, about 0.1 ms each on a VM: a millisecond of
   * every tool call. The workflows here are ours alone (no user code runs in them), so none is the
   * default; patches/@temporalio+worker+*.patch makes the SDK take 0 as none.
   */
  isolateExecutionTimeoutMs: number;
  /**
   * Whether the Temporal UI's Stack Trace tab (the `__stack_trace` query) works for our workflows. The
   * SDK records it with a promise hook that captures and source-maps a stack trace for every promise
   * workflow code creates: half of a tool call's activation on the workflow thread (0.9 against
   * 0.4 ms, bench/where-the-time-goes.md). patches/ lets the SDK leave the hook out.
   */
  stackTraces: boolean;
  /** The deployment version this worker registers (src/temporal/versioning.ts); none: unversioned. */
  deployment?: WorkerDeploymentOptions;
}

/**
 * A cancelled run reaches a running model or tool call with the answer to its next heartbeat, which the
 * SDK otherwise sends at most every 80% of the heartbeat timeout (16 s by default): a cancel then took
 * that long to stop a tool. A heartbeat a second is cheap, and only long calls send more than one.
 */
const HEARTBEAT_THROTTLE = '1 second';

/** The SDK's own bound on an activation. */
const SDK_ISOLATE_EXECUTION_TIMEOUT_MS = 5_000;

/**
 * Whether the SDK takes an isolate execution timeout of 0 as none: patches/, which npm's postinstall
 * applies. An SDK installed without it (`--ignore-scripts`) would fail every activation on 0.
 */
function sdkTakesNoTimeout(): boolean {
  const vm = path.join(path.dirname(require.resolve('@temporalio/worker')), 'workflow', 'reusable-vm.js');
  return fs.readFileSync(vm, 'utf8').includes('isolateExecutionTimeoutMs || undefined');
}

/**
 * The isolate execution timeout the agent worker gets for the one configured: none (0) stands only where
 * the SDK takes it; elsewhere the SDK's default does, and `fallback` says so.
 */
export function isolateExecutionTimeoutFor(configuredMs: number): { ms: number; fallback: boolean } {
  if (configuredMs > 0 || sdkTakesNoTimeout()) return { ms: configuredMs, fallback: false };
  return { ms: SDK_ISOLATE_EXECUTION_TIMEOUT_MS, fallback: true };
}

/** The SDK takes this option, though its type leaves it out ("not exposed at the moment"). */
const isolateExecutionTimeout = (ms: number) => ({ isolateExecutionTimeout: ms }) as Partial<WorkerOptions>;

/**
 * Read by the patched SDK in its workflow threads, which Worker.create spawns with a copy of this
 * environment (patched to pass it explicitly: a test runner's sandboxed `process.env` is not the one
 * Node would copy by default).
 */
const PROMISE_HOOK_SWITCH = 'TEMPORAL_WORKFLOW_PROMISE_HOOK';

/**
 * Whether the agent worker runs its workflows on this thread. The SDK runs them in a worker thread of
 * their own by default and passes every activation there and its completion back: 1.3–1.7 ms of every
 * tool call on a 2-vCPU VM (bench/where-the-time-goes.md). Its `debugMode` (as its replayer does)
 * runs them here instead; a workflow is isolated by its V8 context either way, and its activations are
 * short (our workflows only, no user code). With stack traces on they keep their thread: the promise
 * hook would otherwise watch every promise of the process.
 */
const workflowsOnThisThread = (stackTraces: boolean) => ({ debugMode: !stackTraces });

/** The `agent` task queue's worker: agent-step workflows plus the model and built-in tool activities. */
export function createAgentWorker(options: AgentWorkerOptions): Promise<Worker> {
  process.env[PROMISE_HOOK_SWITCH] = options.stackTraces ? 'on' : 'off';
  return Worker.create({
    ...workflowsOnThisThread(options.stackTraces),
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowsPath: options.workflowsPath ?? require.resolve('../../workflows'),
    activities: options.activities,
    maxCachedWorkflows: options.maxCachedWorkflows,
    ...isolateExecutionTimeout(options.isolateExecutionTimeoutMs),
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
    workerDeploymentOptions: options.deployment,
  });
}

/** A worker for one tool execution mode's task queue (`tools-sandbox`, `tools-mcp`): activities only. */
export function createToolWorker(
  options: Omit<
    AgentWorkerOptions,
    'workflowsPath' | 'maxCachedWorkflows' | 'isolateExecutionTimeoutMs' | 'stackTraces'
  >,
) {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities: options.activities,
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
    workerDeploymentOptions: options.deployment,
  });
}
