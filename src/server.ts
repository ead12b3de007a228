import { randomBytes } from 'node:crypto';
import { agentMessageActivities } from '../activities/agent-messages';
import { laneActivities } from '../activities/lanes';
import { signalLaneReleased, type TurnServices } from './agent/turns';
import type { AddressInfo } from 'node:net';
import { Client } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { sandboxActivities } from '../activities/sandbox';
import { runCodeActivities } from '../activities/run-code';
import { codeInterpreterFor } from './sandbox/e2b-code';
import { webSettings } from './tools/builtin/web-settings';
import { webhookActivities } from '../activities/webhooks';
import { scheduleActivities } from '../activities/schedules';
import { linkMaker, startWebhook, webhookPolicy, webhookSecret } from './agent/webhooks';
import { runCallbackPayload } from './api/run-callback';
import { resumePendingIngestions } from './agent/folders';
import { mcpActivities } from '../activities/mcp';
import { isLoopbackHost, tokensOnly } from './api/access';
import { publicBaseUrl, reachableHost } from './net/hosts';
import { McpOauth } from './mcp/oauth';
import { createApp } from './api/app';
import { forwardingToApi, lateApi, openApiSocket } from './api/api-socket';
import { closeServer, listen } from './api/http-server';
import { ServerStopping } from './api/stopping';
import { sandboxFix } from './banner';
import { RunEvents } from './api/run-events';
import { ApprovalWakes } from './approvals/inbox-events';
import { providerRegistry } from './llm';
import { measuredProviders } from './observability/measured';
import { metricsListener, type MetricsSources } from './observability/metrics-server';
import { ensureBuiltinTools } from './tools/builtin';
import { ConfigError, type Config } from './config';
import { openDatabase, type Database } from './db';
import type { Logger } from './logger';
import { connectTemporal, errorText } from './temporal/connection';
import { provisionTemporal, type TemporalEndpoint } from './temporal/provision';
import { registerSearchAttributes } from './temporal/search-attributes';
import { taskQueues } from './temporal/task-queues';
import { loadDeploymentId } from './db/deployment';
import { createAgentWorker, createToolWorker, WORKFLOWS_PATH } from './temporal/worker';
import { warnWithoutAsyncContextFrames } from './temporal/async-context';
import { vetBuild } from './temporal/replay-sample';
import {
  deploymentName,
  gitCommit,
  makeVersionCurrent,
  promotionCommands,
  versioningMode,
  workerBuildId,
  workerDeploymentOptions,
} from './temporal/versioning';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { sandboxFor, toolSandboxesFor, type ConfiguredSandbox, type ToolSandboxes } from './sandbox';
import { collectPythonEnvs, pythonEnvOptions } from './sandbox/python-env';
import { environmentsReport } from './sandbox/install-process';
import { McpClientPool } from './mcp/client-pool';
import { mcpStdioLauncher, mcpStdioOptions, type McpStdioLauncher } from './mcp/stdio-sandbox';
import { syncMcpTools } from './mcp/tool-sync';
import { toolApiAccess, type ToolApiAccess } from './access/tool-api-access';
import { flushTracing, installTracing, type Tracing } from './observability/tracing';
import { storeSpans } from './observability/span-store';
import { clientInterceptors } from './observability/temporal';
import type { BuiltinActivities, ToolCallActivities, ToolQueueActivities } from '../contracts/activities';
import type { TaskQueueName, ToolQueueName } from '../contracts/tool-modes';

/**
 * `all` runs everything in one process (`npm start`); `api` and `worker` scale apart; `tools` serves the
 * task queues of the tool modes with pools of their own (TOOL_WORKER_POOLS) and nothing else.
 */
export type Role = 'all' | 'api' | 'worker' | 'tools';

/** Whether a role runs the API. */
const runsApi = (role: Role) => role === 'all' || role === 'api';

export interface ServerOptions {
  role?: Role;
  /**
   * Tests swap in their own workflows and activities; production uses the project's. Swapped-in
   * activities run on every worker, the tool modes' task queues too.
   */
  workflowsPath?: string;
  activities?: (deps: { db: Database }) => object;
  /** Where the Temporal SDK's runtime serves its metrics, which `/metrics` appends (main.ts installs it). */
  temporalMetricsUrl?: string;
}

/** Whether custom tools can run here, as the sandbox's start-up probe found. */
export interface SandboxStatus {
  description: string;
  problem?: string;
}

export interface RunningServer {
  /** The API's base URL, when this process serves the API. */
  url?: string;
  /** Whether the API asks every request for a password. */
  passwordRequired: boolean;
  /** Settles once the sandbox's start-up probe has run. */
  sandboxStatus: Promise<SandboxStatus>;
  temporalAddress: string;
  temporalUiUrl?: string;
  db: Database;
  connection: NativeConnection;
  /** The deployment version this process's workers register, when it runs workers. */
  workerVersion?: WorkerDeploymentVersion;
  /** What starts, answers and cancels turns, for code that runs the server in its own process. */
  turns: TurnServices;
  /** Settles when the server stops: rejects if a component failed on its own (the worker crashed). */
  finished: Promise<void>;
  stop(): Promise<void>;
}

/** What start-up has brought up, and how to take it down again. */
interface Lifecycle {
  /** Undone in reverse, after the workers: the last step pushed is the first undone. */
  undo: (() => Promise<void>)[];
  /** First on the way down, together: the workers, once the API takes no new turns. */
  stopWorkers: (() => Promise<void>)[];
  stopping: ServerStopping;
  /** Rejects when a component fails on its own (a worker that crashed); `failed` makes it. */
  failure: Promise<never>;
  failed: (error: Error) => void;
}

/** The sandboxes and MCP connections this process runs tools with, the API's and the workers'. */
interface ToolRuntimes {
  sandbox: ConfiguredSandbox;
  sandboxStatus: Promise<SandboxStatus>;
  toolSandboxes: ToolSandboxes;
  mcp: McpClientPool;
}

/** What the workers and the API start from: the parts of the server both use, up before either. */
interface ServerParts {
  config: Config;
  log: Logger;
  options: ServerOptions;
  role: Role;
  life: Lifecycle;
  tracing?: Tracing;
  temporal: TemporalEndpoint;
  db: Database;
  connection: NativeConnection;
  /** What starting and answering turns works with: the API's, and agents' messages to each other. */
  turns: TurnServices;
  tools: ToolRuntimes;
  /** This process's own API, once it is up: the sandboxes' way to it. */
  localApi: ReturnType<typeof lateApi>;
  toolApi: ToolApiAccess;
}

/**
 * Brings the server up in order (Temporal, database, observability, connection, tools, workers, API)
 * and returns how to stop it, which undoes the same steps in reverse. A failure half-way undoes what was
 * already started.
 */
export async function startServer(
  config: Config,
  log: Logger,
  options: ServerOptions = {},
): Promise<RunningServer> {
  const role = options.role ?? 'all';
  checkRole(config, role);
  const tracing = installTracing({
    captureContent: config.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
  });
  const life = lifecycle(config);
  const stop = () => stopInOrder(life, log);
  try {
    const parts = await startParts(config, log, { ...options, role }, tracing, life);
    const workerVersion = role === 'api' ? undefined : await startWorkers(parts);
    const api = runsApi(role) ? await startApi(parts) : { passwordRequired: false };
    return runningServer(parts, workerVersion, api, stop);
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The embedded database and Temporal server belong to one process: the other roles need both given. */
function checkRole(config: Config, role: Role): void {
  if (role === 'tools' && !config.TOOL_WORKER_POOLS.length)
    throw new ConfigError(
      '--role=tools serves the pools TOOL_WORKER_POOLS names (sandbox, mcp): it names none',
    );
  if (role === 'all' || (config.DATABASE_URL && config.TEMPORAL_ADDRESS)) return;
  throw new ConfigError(
    `--role=${role} needs DATABASE_URL and TEMPORAL_ADDRESS (or a TEMPORAL_PROFILE with an address): ` +
      'the embedded database and Temporal server ' +
      'belong to a single process (npm start)',
  );
}

function lifecycle(config: Config): Lifecycle {
  let failed: (error: Error) => void = () => {};
  const failure = new Promise<never>((_, reject) => (failed = reject));
  // Last on the way down: what the OTLP exporter still holds is sent.
  const undo = [flushTracing];
  return { undo, stopWorkers: [], stopping: new ServerStopping(config.SHUTDOWN_GRACE_MS), failure, failed };
}

/**
 * The drain, then the steps undone in reverse: the API refuses new turns at once (health says
 * `stopping`); the workers stop polling and let the calls they run finish within SHUTDOWN_GRACE_MS
 * (the rest are cut short and retried elsewhere); then the API closes (requests in flight get what
 * is left of the grace), the database, and the embedded Temporal server last.
 */
async function stopInOrder(life: Lifecycle, log: Logger): Promise<void> {
  const logged = (step: () => Promise<void>) => () =>
    step().catch((error) => log.error({ error: errorText(error) }, 'error while stopping'));
  life.stopping.begin();
  await Promise.all(life.stopWorkers.splice(0).map((step) => logged(step)()));
  for (const step of life.undo.reverse().splice(0)) await logged(step)();
}

/** The steps before the workers and the API: Temporal, the database, observability, the tools. */
async function startParts(
  config: Config,
  log: Logger,
  options: ServerOptions & { role: Role },
  tracing: Tracing | undefined,
  life: Lifecycle,
): Promise<ServerParts> {
  const temporal = await provisionTemporal(config, log);
  if (temporal.embedded) life.undo.push(temporal.embedded.stop);
  const db = await startDatabase(config, log, life);
  await startObservability(
    config,
    log,
    { db, tracing, temporalMetricsUrl: options.temporalMetricsUrl },
    life,
  );
  const connection = await connectToTemporal(config, temporal, log, life);
  const deploymentId = await loadDeploymentId(db);
  const tools = startToolRuntimes(config, db, log, life);
  const turns: TurnServices = {
    db,
    config,
    temporal: new Client({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      interceptors: tracing && { workflow: clientInterceptors() },
    }),
    deploymentId,
    taskQueues: taskQueues(config.TASK_QUEUE_PREFIX, deploymentId),
  };
  const { localApi, toolApi } = await startSandboxesApiAccess(config, options.role, db, log, life);
  const role = options.role;
  return {
    config,
    log,
    options,
    role,
    life,
    tracing,
    temporal,
    db,
    connection,
    turns,
    tools,
    localApi,
    toolApi,
  };
}

/** The database, migrated, with the built-in tools stored. */
async function startDatabase(config: Config, log: Logger, life: Lifecycle): Promise<Database> {
  const db = await openDatabase(config, log);
  life.undo.push(() => db.close());
  await ensureBuiltinTools(db);
  return db;
}

/** The spans of runs' traces stored in the database, and `/metrics` when METRICS_PORT is set. */
async function startObservability(
  config: Config,
  log: Logger,
  sources: { db: Database; tracing?: Tracing; temporalMetricsUrl?: string },
  life: Lifecycle,
): Promise<void> {
  const { db, tracing, temporalMetricsUrl } = sources;
  if (tracing) life.undo.push(storeSpans(tracing, db, config, log));
  await serveMetrics(config, { db, log, temporalMetricsUrl }, life.undo);
}

/** The connection the client and every worker share, so TLS and the API key apply to all of them. */
async function connectToTemporal(
  config: Config,
  temporal: TemporalEndpoint,
  log: Logger,
  life: Lifecycle,
): Promise<NativeConnection> {
  const connection = await connectTemporal(
    config.temporal?.address === temporal.address ? config.temporal.connection : temporal.address,
    config.TEMPORAL_CONNECT_TIMEOUT_MS,
  );
  life.undo.push(() => connection.close());
  await ensureSearchAttributes(connection, config.TEMPORAL_NAMESPACE, Boolean(temporal.embedded), log);
  return connection;
}

/** The sandboxes (probed in the background) and this process's MCP connections. */
function startToolRuntimes(config: Config, db: Database, log: Logger, life: Lifecycle): ToolRuntimes {
  const sandbox = sandboxFor(config);
  life.undo.push(async () => sandbox.close());
  const sandboxStatus = reportSandbox(sandbox, config, log);
  const toolSandboxes = toolSandboxesFor(config, sandbox, log.child({ component: 'modal' }));
  life.undo.push(() => toolSandboxes.close());
  const stdio = mcpStdioLauncher(mcpStdioOptions(config));
  void reportMcpStdio(stdio, log);
  const mcp = mcpClientPool(config, stdio, db, log);
  life.undo.push(() => mcp.close());
  return { sandbox, sandboxStatus, toolSandboxes, mcp };
}

/**
 * The sandboxes' ways to the API, there before any worker runs a call: this process's own API once it
 * is up (a request, or a call asking its address, waits for it), or, in a worker, the API at
 * LETTA_PUBLIC_URL.
 */
async function startSandboxesApiAccess(
  config: Config,
  role: Role,
  db: Database,
  log: Logger,
  life: Lifecycle,
): Promise<{ localApi: ReturnType<typeof lateApi>; toolApi: ToolApiAccess }> {
  const localApi = lateApi();
  if (!runsApi(role)) localApi.fail();
  const socketListener = !runsApi(role)
    ? config.LETTA_PUBLIC_URL &&
      forwardingToApi(config.LETTA_PUBLIC_URL, {
        retryMs: config.API_FORWARD_RETRY_MS,
        maxBodyBytes: config.MAX_REQUEST_BODY_BYTES,
      })
    : tokensOnly(localApi.listener);
  let apiSocket: string | undefined;
  if (socketListener) {
    const socket = await openApiSocket(socketListener, config.HTTP_KEEP_ALIVE_TIMEOUT_MS);
    life.undo.push(() => socket.close());
    apiSocket = socket.path;
  }
  // Before the socket closes (undo runs backwards): a request still waiting for the app is answered.
  life.undo.push(async () => localApi.fail());
  const toolApi = toolApiAccess(
    db,
    {
      publicUrl: config.LETTA_PUBLIC_URL,
      localUrl: localApi.url,
      socket: apiSocket,
      localHasNetwork: config.SANDBOX_TYPE === 'local-unsafe',
    },
    config.ACCESS_TOKEN_MAX_AGENTS,
  );
  if (!config.LETTA_PUBLIC_URL && (config.E2B_API_KEY || config.MODAL_TOKEN_ID))
    log.info(
      'tools on E2B or Modal get no Letta client (no LETTA_BASE_URL, no LETTA_API_KEY): set LETTA_PUBLIC_URL to the URL they reach this API at',
    );
  return { localApi, toolApi };
}

/** The workers of the three task queues, polling, and their deployment version made current when it may. */
async function startWorkers(parts: ServerParts): Promise<WorkerDeploymentVersion> {
  const { config, log, turns, life } = parts;
  const version: WorkerDeploymentVersion = {
    deploymentName: deploymentName(config.TASK_QUEUE_PREFIX, turns.deploymentId),
    buildId: workerBuildId(config.WORKER_BUILD_ID, gitCommit()),
  };
  const workers = await createWorkers(parts, workerDeploymentOptions(version), workerActivities(parts));
  for (const worker of workers) runWorker(worker, parts);
  await promoteVersion(parts, version);
  const collecting = collectUnusedEnvironments(config, log);
  life.undo.push(async () => clearInterval(collecting));
  return version;
}

/** What each task queue's worker registers; activities a test swaps in run on every worker. */
function workerActivities(parts: ServerParts): Record<TaskQueueName, object> {
  const { config, db, log, turns, tools, toolApi, options } = parts;
  const swappedIn = options.activities?.({ db });
  if (swappedIn) return { agent: swappedIn, sandbox: swappedIn, mcp: swappedIn };
  const sandboxed = {
    ...sandboxActivities({
      db,
      sandboxes: tools.toolSandboxes,
      toolTimeoutMs: config.TOOL_TIMEOUT_MS,
      api: toolApi,
    }),
    ...runCodeActivities({
      db,
      sandbox: tools.sandbox,
      interpreter: codeInterpreterFor(config),
      timeoutMs: config.TOOL_TIMEOUT_MS,
    }),
  };
  const mcpCalls = mcpActivities({
    db,
    pool: tools.mcp,
    callTimeoutMs: config.MCP_CALL_TIMEOUT_MS,
    imageMaxBytes: config.TOOL_RETURN_IMAGE_MAX_BYTES,
  });
  // Each tool worker that can live apart, with the activities of the modes on its queue.
  const toolCalls = { sandbox: sandboxed, mcp: mcpCalls } satisfies ToolQueueActivities;
  // Every mode's activity runs on the agent worker (the built-ins' with createActivities): the
  // sandboxed and MCP calls too, when LOCAL_TOOL_CALLS makes them local activities.
  const agentToolCalls = {
    ...sandboxed,
    ...mcpCalls,
    ...agentMessageActivities(turns),
  } satisfies Omit<ToolCallActivities, keyof BuiltinActivities>;
  const agent = {
    ...createActivities({
      db,
      log,
      providers: measuredProviders(providerRegistry(config)),
      web: webSettings(config),
      files: { grepPageSize: config.GREP_FILES_PAGE_SIZE },
      imageMaxBytes: config.TOOL_RETURN_IMAGE_MAX_BYTES,
      transcriptCacheMessages: config.MODEL_TRANSCRIPT_CACHE_MESSAGES,
      startWebhook: (subject) => startWebhook(turns, subject),
      laneReleased: (scope) => signalLaneReleased(turns, scope),
    }),
    ...agentToolCalls,
    ...laneActivities(turns),
    ...scheduleActivities(turns),
    ...webhookActivities({
      db,
      policy: webhookPolicy(config),
      secret: () => webhookSecret(db, config.WEBHOOK_SECRET),
      runPayload: (run) => runCallbackPayload(db, run),
      approvalUrl: config.APPROVAL_WEBHOOK_URL,
      links: linkMaker(db, config),
    }),
  };
  return { agent, ...toolCalls };
}

/** The agent worker (workflows and the turn's activities) and the tool modes' workers. */
async function createWorkers(
  parts: ServerParts,
  deployment: ReturnType<typeof workerDeploymentOptions>,
  activities: Record<TaskQueueName, object>,
): Promise<Worker[]> {
  const { config, connection, tracing, turns, options, log } = parts;
  const polled = polledQueues(parts);
  if (polled.includes('agent')) warnWithoutAsyncContextFrames(log);
  const common = {
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    deployment,
    tracing,
    shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
  };
  const queues = turns.taskQueues;
  return Promise.all(
    polled.map((queue) =>
      queue === 'agent'
        ? createAgentWorker({
            ...common,
            taskQueue: queues.agent,
            workflowsPath: options.workflowsPath,
            maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS,
            activities: activities.agent,
          })
        : createToolWorker({ ...common, taskQueue: queues[queue], activities: activities[queue] }),
    ),
  );
}

/**
 * The task queues a process polls. A `tools` process: the pools of TOOL_WORKER_POOLS. One that runs
 * turns: the turns' queue, whose worker has every mode's activities (calls without a pool of their own
 * run there), and each tool queue without a pool, which turns started by an earlier build or before
 * its mode lost its pool still name.
 */
function polledQueues({ role, config, turns }: ServerParts): TaskQueueName[] {
  const pools = config.TOOL_WORKER_POOLS;
  if (role === 'tools') return [...pools];
  const toolQueues = Object.keys(turns.taskQueues).filter((queue) => queue !== 'agent') as ToolQueueName[];
  return ['agent', ...toolQueues.filter((queue) => !pools.includes(queue))];
}

/** A worker polling until the server stops; its failure before then fails the server. */
function runWorker(worker: Worker, { log, life }: ServerParts): void {
  const { taskQueue } = worker.options;
  const running = worker.run().catch((error) => {
    if (!life.stopping.stopping) {
      log.fatal({ error: errorText(error), taskQueue }, 'worker failed');
      return life.failed(error);
    }
    log.warn(
      { error: errorText(error), taskQueue },
      'the worker stopped before every call it cut short had ended: those calls are retried elsewhere',
    );
  });
  life.stopWorkers.push(async () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running;
  });
}

/**
 * A versioned deployment routes tasks only to its current version: before the API takes a message,
 * this version becomes current when nothing can be stranded or rolled back by it (see
 * src/temporal/versioning.ts).
 */
async function promoteVersion(parts: ServerParts, version: WorkerDeploymentVersion): Promise<void> {
  const { config, log, role, db, connection, turns, temporal, options } = parts;
  const queues = turns.taskQueues;
  // A tools process serves its build's version; the processes that run turns make a version current.
  const versioning = role === 'tools' ? undefined : versioningMode(config.WORKER_VERSIONING, role);
  const namespace = config.TEMPORAL_NAMESPACE;
  const polled = polledQueues(parts).map((queue) => queues[queue]);
  log.info(
    {
      taskQueues: polled,
      namespace,
      deployment: version.deploymentName,
      buildId: version.buildId,
      versioning: versioning ?? 'by the workers that run turns',
    },
    'worker polling',
  );
  if (!versioning) return;
  await makeVersionCurrent({
    connection,
    db,
    namespace,
    version,
    mode: versioning,
    taskQueues: polled,
    timeoutMs: config.TEMPORAL_CONNECT_TIMEOUT_MS,
    log,
    vet: () =>
      vetBuild({
        client: turns.temporal,
        workflowsPath: options.workflowsPath ?? WORKFLOWS_PATH,
        openPerType: config.WORKER_REPLAY_OPEN_MAX,
        closedPerType: config.WORKER_REPLAY_CLOSED,
        where: `TaskQueue = "${queues.agent}"`,
        log,
      }),
    commands: promotionCommands({ address: temporal.address, namespace }, version),
  });
}

/** The API listening, its run and approval streams woken by the database, and pending uploads resumed. */
async function startApi(parts: ServerParts): Promise<{ url: string; passwordRequired: boolean }> {
  const { config, log, db, turns, tools, life, connection, localApi, toolApi, temporal } = parts;
  const runEvents = new RunEvents(
    db,
    { pollMs: config.STREAM_POLL_INTERVAL_MS, fallbackMs: config.STREAM_FALLBACK_POLL_MS },
    log,
  );
  runEvents.start();
  life.undo.push(() => runEvents.close());
  const approvalWakes = new ApprovalWakes(db, config.STREAM_FALLBACK_POLL_MS);
  const password = apiPassword(config, log);
  const app = createApp({
    ...turns,
    config: { ...config, LETTA_SERVER_PASSWORD: password },
    connection,
    sandbox: tools.sandbox,
    toolSandboxes: tools.toolSandboxes,
    toolApi,
    mcp: tools.mcp,
    runEvents,
    approvalWakes,
    stopping: life.stopping,
    log,
  });
  const keepAliveMs = config.HTTP_KEEP_ALIVE_TIMEOUT_MS;
  const server = await listen(app, { port: config.PORT, host: config.HOST }, keepAliveMs);
  // Requests in flight get what is left of the grace; any still open then are cut (a stream's
  // client resumes it from the run).
  life.undo.push(() => closeServer(server, life.stopping.graceLeftMs()));
  // Before the server closes, which waits for them: the approval streams end.
  life.undo.push(() => approvalWakes.close());
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.HOST}:${port}`;
  localApi.resolve(app, `http://${reachableHost(config.HOST)}:${port}`);
  log.info({ url, temporalUi: temporal.embedded?.uiUrl }, 'API listening');
  const resumed = await resumePendingIngestions(turns);
  if (resumed) log.info({ resumed }, 'started the ingestion of uploads left pending');
  return { url, passwordRequired: Boolean(password) };
}

/** The server as its caller holds it: what it reached, and how to stop it. */
function runningServer(
  parts: ServerParts,
  workerVersion: WorkerDeploymentVersion | undefined,
  api: { url?: string; passwordRequired: boolean },
  stop: () => Promise<void>,
): RunningServer {
  let stopped: () => void = () => {};
  const finished = Promise.race([new Promise<void>((resolve) => (stopped = resolve)), parts.life.failure]);
  return {
    ...api,
    sandboxStatus: parts.tools.sandboxStatus,
    temporalAddress: parts.temporal.address,
    temporalUiUrl: parts.temporal.embedded?.uiUrl,
    db: parts.db,
    connection: parts.connection,
    workerVersion,
    turns: parts.turns,
    finished,
    stop: async () => {
      await stop();
      stopped();
    },
  };
}

/** On our own dev server the attributes must exist; on a shared cluster we may lack the permission. */
async function ensureSearchAttributes(
  connection: NativeConnection,
  namespace: string,
  required: boolean,
  log: Logger,
): Promise<void> {
  try {
    const added = await registerSearchAttributes(connection, namespace);
    if (added.length) log.info({ added, namespace }, 'registered custom search attributes');
  } catch (error) {
    if (required) throw error;
    log.warn(
      { error: errorText(error), namespace },
      'could not register the custom search attributes: register them with `temporal operator search-attribute create`',
    );
  }
}

/**
 * The password the API asks for. Without one it must listen on loopback only; asked to listen beyond
 * it, it makes one, as Letta's secure mode does, and prints it once on stderr (never into the log).
 */
function apiPassword(config: Config, log: Logger): string | undefined {
  if (config.LETTA_SERVER_PASSWORD || isLoopbackHost(config.HOST)) return config.LETTA_SERVER_PASSWORD;
  const password = randomBytes(24).toString('base64url');
  log.warn(
    { host: config.HOST },
    'the API listens beyond loopback without LETTA_SERVER_PASSWORD: a password was generated for this run (printed on stderr)',
  );
  process.stderr.write(
    `HOST=${config.HOST} listens beyond loopback and LETTA_SERVER_PASSWORD is not set.\n` +
      `Every request but GET /v1/health/ must send this run's password, e.g. Authorization: Bearer <password>:\n` +
      `    ${password}\n` +
      'Set LETTA_SERVER_PASSWORD to choose one that survives restarts.\n',
  );
  return password;
}

/** The start-up probe of the sandbox, in the log: custom tools are refused while it fails. */
async function reportSandbox(
  sandbox: ConfiguredSandbox,
  config: Config,
  log: Logger,
): Promise<SandboxStatus> {
  const problem = await sandbox.problem();
  const status = { description: sandbox.describe(), ...(problem ? { problem } : {}) };
  if (problem)
    log.error(
      { sandbox: sandbox.describe(), problem, fix: sandboxFix(problem) },
      'the sandbox does not work here: custom tools are refused',
    );
  else if (config.SANDBOX_TYPE === 'local-unsafe')
    log.warn(
      { sandbox: sandbox.describe() },
      'custom tools run WITHOUT isolation (SANDBOX_TYPE=local-unsafe)',
    );
  else log.info({ sandbox: sandbox.describe() }, 'sandbox ready');
  if (config.SANDBOX_TYPE !== 'e2b') {
    const environments = environmentsReport(config);
    if (environments.problem) log.error({ fix: environments.fix }, environments.problem);
    else log.info({ toolEnvironments: environments.detail }, 'tool environments');
  }
  return status;
}

/** Where stdio MCP servers run, in the log: unconfined only on request, refused when the sandbox fails. */
async function reportMcpStdio(stdio: McpStdioLauncher, log: Logger): Promise<void> {
  const problem = await stdio.problem();
  if (problem)
    log.error(
      { mcpStdio: stdio.describe(), problem },
      'the MCP sandbox does not work here: stdio MCP servers are refused',
    );
  else if (stdio.mode === 'off') log.info('stdio MCP servers are turned off (MCP_STDIO=off)');
  else if (stdio.mode === 'host')
    log.warn(
      { mcpStdio: stdio.describe() },
      "stdio MCP servers run WITHOUT isolation, as this server's user (MCP_STDIO=host): whoever may register an MCP server may run any command on this host",
    );
  else log.info({ mcpStdio: stdio.describe() }, 'stdio MCP servers ready');
}

/** This process's MCP connections; a server's word that its tools changed updates the stored ones. */
function mcpClientPool(config: Config, stdio: McpStdioLauncher, db: Database, log: Logger): McpClientPool {
  return new McpClientPool({
    timeouts: { connectMs: config.MCP_CONNECT_TIMEOUT_MS, listMs: config.MCP_LIST_TIMEOUT_MS },
    stdio,
    reconnectInitialMs: config.MCP_RECONNECT_INITIAL_MS,
    reconnectMaxMs: config.MCP_RECONNECT_MAX_MS,
    oauth: new McpOauth(db, {
      publicUrl: publicBaseUrl(config),
      stateTtlMs: config.MCP_OAUTH_STATE_TTL_SECONDS * 1000,
      refreshMarginMs: config.MCP_OAUTH_REFRESH_MARGIN_SECONDS * 1000,
      fetchPolicy: {
        timeoutMs: config.MCP_OAUTH_FETCH_TIMEOUT_MS,
        maxBytes: config.MCP_OAUTH_MAX_RESPONSE_BYTES,
        maxRedirects: config.MCP_OAUTH_MAX_REDIRECTS,
        allow: config.OUTBOUND_ALLOW_PRIVATE,
      },
    }),
    taskPollMs: config.MCP_TASK_POLL_MS,
    elicitationHoldMs: config.MCP_ELICITATION_HOLD_MS,
    inputRounds: config.MCP_INPUT_ROUNDS,
    log,
    onToolsChanged: async (serverId, tools) => {
      const { added, updated, deleted } = await syncMcpTools(db, serverId, tools);
      if (added.length + updated.length + deleted.length)
        log.info({ server: serverId, added, updated, deleted }, 'MCP server tools changed');
    },
  });
}

/** Tools' dependency environments unused for SANDBOX_ENV_MAX_AGE_MS are removed, checked hourly. */
function collectUnusedEnvironments(config: Config, log: Logger): NodeJS.Timeout {
  const collect = () =>
    collectPythonEnvs(pythonEnvOptions(config)).then(
      (removed) => removed.length && log.info({ removed }, 'removed unused tool environments'),
      (error) => log.warn({ error: errorText(error) }, 'could not collect unused tool environments'),
    );
  return setInterval(collect, 60 * 60 * 1000).unref();
}

/** `/metrics` on its own listener when METRICS_PORT is set (docs/operations.md says why). */
async function serveMetrics(
  config: Config,
  sources: MetricsSources,
  undo: (() => Promise<void>)[],
): Promise<void> {
  if (config.METRICS_PORT === undefined) return;
  const at = { port: config.METRICS_PORT, host: config.METRICS_HOST };
  const server = await listen(metricsListener(sources), at, config.HTTP_KEEP_ALIVE_TIMEOUT_MS);
  undo.push(() => closeServer(server));
  const url = `http://${config.METRICS_HOST}:${(server.address() as AddressInfo).port}/metrics`;
  sources.log.info({ url, temporal: Boolean(sources.temporalMetricsUrl) }, 'metrics listening');
}
