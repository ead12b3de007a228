import { randomBytes } from 'node:crypto';
import { agentMessageActivities } from '../activities/agent-messages';
import { laneActivities } from '../activities/lanes';
import { signalLaneReleased, type TurnServices } from './agent/turns';
import type { AddressInfo } from 'node:net';
import { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
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
import { ApprovalWakes } from './api/approval-events';
import { providerRegistry } from './llm';
import { measuredProviders } from './observability/measured';
import { metricsListener, type MetricsSources } from './observability/metrics-server';
import { ensureBuiltinTools } from './tools/builtin';
import { ConfigError, type Config } from './config';
import { openDatabase, type Database } from './db';
import type { Logger } from './logger';
import { connectTemporal, errorText } from './temporal/connection';
import { provisionTemporal } from './temporal/provision';
import { registerSearchAttributes } from './temporal/search-attributes';
import { taskQueues } from './temporal/task-queues';
import { loadDeploymentId } from './db/deployment';
import { createAgentWorker, createToolWorker, WORKFLOWS_PATH } from './temporal/worker';
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
import { sandboxFor, toolSandboxesFor, type ConfiguredSandbox } from './sandbox';
import { collectPythonEnvs, pythonEnvOptions } from './sandbox/python-env';
import { environmentsReport } from './sandbox/install-process';
import { McpClientPool } from './mcp/client-pool';
import { mcpStdioLauncher, mcpStdioOptions, type McpStdioLauncher } from './mcp/stdio-sandbox';
import { syncMcpTools } from './mcp/tool-sync';
import { toolApiAccess } from './tools/tool-api-access';
import { flushTracing, installTracing } from './observability/tracing';
import { storeSpans } from './observability/span-store';
import { clientInterceptors } from './observability/temporal';
import type { BuiltinActivities, ToolCallActivities, ToolQueueActivities } from '../contracts/activities';
import type { ToolQueueName } from '../contracts/tool-modes';

/** `all` runs everything in one process (`npm start`); `api` and `worker` scale apart. */
export type Role = 'all' | 'api' | 'worker';

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

/**
 * Brings the server up in order (Temporal, database, connection, worker, API) and returns how to stop
 * it, which undoes the same steps in reverse. A failure half-way undoes what was already started.
 */
export async function startServer(
  config: Config,
  log: Logger,
  options: ServerOptions = {},
): Promise<RunningServer> {
  const role = options.role ?? 'all';
  if (role !== 'all' && (!config.DATABASE_URL || !config.TEMPORAL_ADDRESS)) {
    throw new ConfigError(
      `--role=${role} needs DATABASE_URL and TEMPORAL_ADDRESS (or a TEMPORAL_PROFILE with an address): ` +
        'the embedded database and Temporal server ' +
        'belong to a single process (npm start)',
    );
  }
  const tracing = installTracing({
    captureContent: config.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
  });
  // Last on the way down: what the OTLP exporter still holds is sent.
  const undo: (() => Promise<void>)[] = [flushTracing];
  // First on the way down, together: the workers, once the API takes no new turns.
  const stopWorkers: (() => Promise<void>)[] = [];
  const stopping = new ServerStopping(config.SHUTDOWN_GRACE_MS);
  const logged = (step: () => Promise<void>) => () =>
    step().catch((error) => log.error({ error: errorText(error) }, 'error while stopping'));
  /**
   * The drain, then the steps undone in reverse: the API refuses new turns at once (health says
   * `stopping`); the workers stop polling and let the calls they run finish within SHUTDOWN_GRACE_MS
   * (the rest are cut short and retried elsewhere); then the API closes (requests in flight get what
   * is left of the grace), the database, and the embedded Temporal server last.
   */
  const stop = async () => {
    stopping.begin();
    await Promise.all(stopWorkers.splice(0).map((step) => logged(step)()));
    for (const step of undo.reverse().splice(0)) await logged(step)();
  };
  let failed: (error: Error) => void = () => {};
  const componentFailure = new Promise<never>((_, reject) => (failed = reject));

  try {
    const temporal = await provisionTemporal(config, log);
    if (temporal.embedded) undo.push(temporal.embedded.stop);

    const db = await openDatabase(config, log);
    undo.push(() => db.close());
    if (tracing) undo.push(storeSpans(tracing, db, config, log));
    await ensureBuiltinTools(db);
    await serveMetrics(config, { db, log, temporalMetricsUrl: options.temporalMetricsUrl }, undo);

    // The client and every worker share this connection, so TLS and the API key apply to all of them.
    const connection = await connectTemporal(
      config.temporal?.address === temporal.address ? config.temporal.connection : temporal.address,
      config.TEMPORAL_CONNECT_TIMEOUT_MS,
    );
    undo.push(() => connection.close());
    await ensureSearchAttributes(connection, config.TEMPORAL_NAMESPACE, Boolean(temporal.embedded), log);

    const deploymentId = await loadDeploymentId(db);
    const queues = taskQueues(config.TASK_QUEUE_PREFIX, deploymentId);
    const sandbox = sandboxFor(config);
    undo.push(async () => sandbox.close());
    const sandboxStatus = reportSandbox(sandbox, config, log);
    const toolSandboxes = toolSandboxesFor(config, sandbox, log.child({ component: 'modal' }));
    undo.push(() => toolSandboxes.close());
    const stdio = mcpStdioLauncher(mcpStdioOptions(config));
    void reportMcpStdio(stdio, log);
    const mcp = mcpClientPool(config, stdio, db, log);
    undo.push(() => mcp.close());
    // What starting and answering turns works with: the API's, and agents' messages to each other.
    const turns: TurnServices = {
      db,
      config,
      temporal: new Client({
        connection,
        namespace: config.TEMPORAL_NAMESPACE,
        interceptors: tracing && { workflow: clientInterceptors() },
      }),
      deploymentId,
      taskQueues: queues,
    };
    let workerVersion: WorkerDeploymentVersion | undefined;
    // The sandboxes' ways to the API, there before any worker runs a call: this process's own API once
    // it is up (a request, or a call asking its address, waits for it), or, in a worker, the API at
    // LETTA_PUBLIC_URL.
    const localApi = lateApi();
    if (role === 'worker') localApi.fail();
    const socketListener =
      role === 'worker'
        ? config.LETTA_PUBLIC_URL &&
          forwardingToApi(config.LETTA_PUBLIC_URL, {
            retryMs: config.API_FORWARD_RETRY_MS,
            maxBodyBytes: config.MAX_REQUEST_BODY_BYTES,
          })
        : tokensOnly(localApi.listener);
    let apiSocket: string | undefined;
    if (socketListener) {
      const socket = await openApiSocket(socketListener, config.HTTP_KEEP_ALIVE_TIMEOUT_MS);
      undo.push(() => socket.close());
      apiSocket = socket.path;
    }
    // Before the socket closes (undo runs backwards): a request still waiting for the app is answered.
    undo.push(async () => localApi.fail());
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
    if (role !== 'api') {
      workerVersion = {
        deploymentName: deploymentName(config.TASK_QUEUE_PREFIX, deploymentId),
        buildId: workerBuildId(config.WORKER_BUILD_ID, gitCommit()),
      };
      const deployment = workerDeploymentOptions(workerVersion);
      const sandboxed = {
        ...sandboxActivities({
          db,
          sandboxes: toolSandboxes,
          toolTimeoutMs: config.TOOL_TIMEOUT_MS,
          api: toolApi,
        }),
        ...runCodeActivities({
          db,
          sandbox,
          interpreter: codeInterpreterFor(config),
          timeoutMs: config.TOOL_TIMEOUT_MS,
        }),
      };
      const mcpCalls = mcpActivities({
        db,
        pool: mcp,
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
      const swappedIn = options.activities?.({ db });
      const agentWorker = await createAgentWorker({
        connection,
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: queues.agent,
        workflowsPath: options.workflowsPath,
        maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS,
        deployment,
        tracing,
        shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
        activities: swappedIn ?? {
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
        },
      });
      const toolWorkers = [];
      for (const [queue, activities] of Object.entries(toolCalls) as [ToolQueueName, object][])
        toolWorkers.push(
          await createToolWorker({
            connection,
            namespace: config.TEMPORAL_NAMESPACE,
            taskQueue: queues[queue],
            deployment,
            tracing,
            shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
            activities: swappedIn ?? activities,
          }),
        );
      for (const worker of [agentWorker, ...toolWorkers]) {
        const { taskQueue } = worker.options;
        const running = worker.run().catch((error) => {
          if (!stopping.stopping) {
            log.fatal({ error: errorText(error), taskQueue }, 'worker failed');
            return failed(error);
          }
          log.warn(
            { error: errorText(error), taskQueue },
            'the worker stopped before every call it cut short had ended: those calls are retried elsewhere',
          );
        });
        stopWorkers.push(async () => {
          if (worker.getState() === 'RUNNING') worker.shutdown();
          await running;
        });
      }
      const versioning = versioningMode(config.WORKER_VERSIONING, role);
      log.info(
        {
          taskQueues: Object.values(queues),
          namespace: config.TEMPORAL_NAMESPACE,
          deployment: workerVersion.deploymentName,
          buildId: workerVersion.buildId,
          versioning,
        },
        'worker polling',
      );
      // A versioned deployment routes tasks only to its current version: before the API takes a
      // message, this version becomes current when nothing can be stranded or rolled back by it (see
      // src/temporal/versioning.ts).
      await makeVersionCurrent({
        connection,
        db,
        namespace: config.TEMPORAL_NAMESPACE,
        version: workerVersion,
        mode: versioning,
        taskQueues: Object.values(queues),
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
        commands: promotionCommands(
          { address: temporal.address, namespace: config.TEMPORAL_NAMESPACE },
          workerVersion,
        ),
      });
      const collecting = collectUnusedEnvironments(config, log);
      undo.push(async () => clearInterval(collecting));
    }

    let url: string | undefined;
    let passwordRequired = false;
    if (role !== 'worker') {
      const runEvents = new RunEvents(
        db,
        { pollMs: config.STREAM_POLL_INTERVAL_MS, fallbackMs: config.STREAM_FALLBACK_POLL_MS },
        log,
      );
      runEvents.start();
      undo.push(() => runEvents.close());
      const approvalWakes = new ApprovalWakes(db, config.STREAM_FALLBACK_POLL_MS);
      const password = apiPassword(config, log);
      passwordRequired = Boolean(password);
      const app = createApp({
        ...turns,
        config: { ...config, LETTA_SERVER_PASSWORD: password },
        connection,
        sandbox,
        toolSandboxes,
        toolApi,
        mcp,
        runEvents,
        approvalWakes,
        stopping,
        log,
      });
      const keepAliveMs = config.HTTP_KEEP_ALIVE_TIMEOUT_MS;
      const server = await listen(app, { port: config.PORT, host: config.HOST }, keepAliveMs);
      // Requests in flight get what is left of the grace; any still open then are cut (a stream's
      // client resumes it from the run).
      undo.push(() => closeServer(server, stopping.graceLeftMs()));
      // Before the server closes, which waits for them: the approval streams end.
      undo.push(() => approvalWakes.close());
      const { port } = server.address() as AddressInfo;
      url = `http://${config.HOST}:${port}`;
      localApi.resolve(app, `http://${reachableHost(config.HOST)}:${port}`);
      log.info({ url, temporalUi: temporal.embedded?.uiUrl }, 'API listening');
      const resumed = await resumePendingIngestions(turns);
      if (resumed) log.info({ resumed }, 'started the ingestion of uploads left pending');
    }

    let stopped: () => void = () => {};
    const finished = Promise.race([new Promise<void>((resolve) => (stopped = resolve)), componentFailure]);
    return {
      url,
      passwordRequired,
      sandboxStatus,
      temporalAddress: temporal.address,
      temporalUiUrl: temporal.embedded?.uiUrl,
      db,
      connection,
      workerVersion,
      turns,
      finished,
      stop: async () => {
        await stop();
        stopped();
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
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
