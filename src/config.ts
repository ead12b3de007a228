import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { DEFAULT_IMAGE_MAX_BYTES } from './returns/return-parts';
import { parseAllowList } from './net/private-addresses';
import { modalUnsupportedReason } from './sandbox/modal-support';
import { parseSecretsKey } from './secrets';
import { TemporalSettingsError, temporalTarget, type TemporalTarget } from './temporal/env-config';

/**
 * The node TypeScript tools run on: the server's own when the sandbox can see it (it shows only /usr),
 * else the system's (a server run from nvm or scripts/install-node.sh's cache).
 */
function sandboxNode(): string {
  if (process.execPath.startsWith('/usr/')) return process.execPath;
  return ['/usr/bin/node', '/usr/local/bin/node'].find((node) => fs.existsSync(node)) ?? process.execPath;
}

/** Empty strings count as unset, as docker-compose and shells often pass them. */
const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const port = z.coerce
  .number({ error: 'expected a port number' })
  .int('expected a whole number')
  .min(1, 'expected a port from 1 to 65535')
  .max(65535, 'expected a port from 1 to 65535');

const milliseconds = z.coerce.number({ error: 'expected milliseconds' }).int().positive();

const url = z.url({ error: 'expected a URL' });

const flag = z
  .enum(['true', 'false'], { error: 'expected true or false' })
  .transform((value) => value === 'true');

/** A boolean as Temporal's envconfig reads it (`true`/`1` or `false`/`0`). */
const temporalFlag = z
  .enum(['true', 'false', '1', '0'], { error: 'expected true or false' })
  .transform((value) => value === 'true' || value === '1');

/** host:port of a gRPC endpoint, as Temporal clients take it. */
const hostPort = z.string().regex(/^[^\s:/]+:\d{1,5}$/, 'expected host:port, e.g. temporal:7233');

const secretsKey = z.string().transform((text, ctx) => {
  const key = parseSecretsKey(text);
  if (key) return key;
  ctx.addIssue({
    code: 'custom',
    message: 'expected 32 bytes as base64 or hex, e.g. the output of `openssl rand -base64 32`',
  });
  return z.NEVER;
});

/** A comma-separated list; blanks dropped. */
const list = z
  .string()
  .default('')
  .transform((text) =>
    text
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  );

/** Origins as browsers send them (`https://app.example.com`, no path): a trailing slash is dropped. */
const originList = list.transform((items, ctx) =>
  items.map((item) => {
    const origin = URL.canParse(item) ? new URL(item).origin : 'null';
    if (origin === 'null')
      ctx.addIssue({ code: 'custom', message: `expected origins like https://app.example.com, not ${item}` });
    return origin;
  }),
);

const allowList = z
  .string()
  .default('')
  .transform((text, ctx) => {
    try {
      return parseAllowList(text);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  });

/** Absolute paths separated by ":", as in PATH. */
const pathList = z.string().transform((text, ctx) => {
  const paths = text.split(':').filter(Boolean);
  for (const relative of paths.filter((entry) => !path.isAbsolute(entry)))
    ctx.addIssue({ code: 'custom', message: `expected absolute paths separated by ":", not ${relative}` });
  return paths.map((entry) => path.resolve(entry));
});

/** Settings whose value a configuration error must not repeat: keys, passwords, URLs with credentials. */
const isHidden = (name: string) => /KEY|PASSWORD|SECRET|TOKEN|DATABASE_URL/.test(name);

/**
 * The default as docs/configuration.md shows it, where the schema's default is no value to print (unset,
 * chosen at start-up, or the machine's): scripts/config-doc.ts prints every other default as parsed.
 */
export const shownDefaults: Partial<Record<string, string>> = {
  DATABASE_URL: 'unset: PGlite',
  SECRETS_KEY: 'unset: generated',
  TEMPORAL_ADDRESS: 'unset: embedded',
  TEMPORAL_PROFILE: 'unset: `default`',
  TEMPORAL_CONFIG_FILE: 'unset: `~/.config/temporalio/temporal.toml`',
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: 'unset: system CAs',
  TEMPORAL_TLS_SERVER_NAME: 'unset: the host',
  WORKER_BUILD_ID: 'unset: the release',
  WORKER_VERSIONING: 'unset: by role',
  OPENAI_BASE_URL: 'OpenAI',
  ANTHROPIC_BASE_URL: 'Anthropic',
  STEP_TASK_TIMEOUT_MS: "unset: Temporal's 10 s",
  OUTBOUND_ALLOW_PRIVATE: 'empty',
  WEBHOOK_SECRET: 'unset: made once per deployment',
  E2B_CODE_TEMPLATE: "the SDK's",
  MODAL_ENVIRONMENT: "Modal's default",
  SANDBOX_ENV_DIR: 'in `DATA_DIR`',
  SANDBOX_PIP_PYTHON: 'unset: probed',
  PIP_INDEX_URL: 'unset: PyPI',
  SANDBOX_NODE: "server's `node`",
  NPM_REGISTRY_URL: "npm's own",
};

export const ConfigSchema = z.object({
  PORT: port.default(8283).describe('REST API port'),
  LETTA_PUBLIC_URL: url
    .optional()
    .describe(
      "the API's URL as sandboxes reach it (E2B, Modal, or a local sandbox with the network): sandboxed tools get it as `LETTA_BASE_URL` with a token for their call; in a worker-only process, where local sandboxes without the network reach the API too (through their bridge). Unset: a local sandbox with the network gets this server's own address, remote sandboxes and a worker's sandboxes without the network get no client",
    ),
  API_FORWARD_RETRY_MS: milliseconds
    .default(30_000)
    .describe(
      "in a worker-only process: how long a sandboxed tool's request to the API at `LETTA_PUBLIC_URL` is sent again while no API listens there (the API's replicas restarting in a deploy), before the tool gets a 502",
    ),
  HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .describe('REST API bind address (`0.0.0.0` to listen on every interface)'),
  DATA_DIR: z.string().min(1).default('./data').describe('embedded database and Temporal history'),
  LETTA_SERVER_PASSWORD: optional(z.string()).describe(
    'password every route but `GET /v1/health/` asks for (`Authorization: Bearer …` or `X-BARE-PASSWORD: password …`); unset: loopback needs none, and a bind beyond loopback gets one made at start-up (see [Security](security.md))',
  ),
  ALLOWED_HOSTS: list.describe(
    'comma-separated host names clients use besides loopback ones and `HOST` itself (`.example.com`: a domain and its subdomains; `*`: any); another `Host` gets 403',
  ),
  CORS_ORIGINS: originList.describe(
    'comma-separated origins of web apps (e.g. `https://app.letta.com`) that browsers may call the API from; any other `Origin` gets 403',
  ),
  AUTH_FAILURE_LIMIT: z.coerce
    .number()
    .int()
    .positive()
    .default(20)
    .describe(
      'failed password checks from one address per window; past it, that address gets 429 until the window ends',
    ),
  AUTH_FAILURE_WINDOW_MS: milliseconds.default(60_000).describe('the window of `AUTH_FAILURE_LIMIT`'),
  ACCESS_TOKEN_DEFAULT_TTL_MS: milliseconds
    .default(300_000)
    .describe(
      'how long a scoped access token (`/v1/client-side-access-tokens`) lives when made without `expires_at`',
    ),
  ACCESS_TOKEN_MAX_TTL_MS: milliseconds
    .default(30 * 24 * 3_600_000)
    .describe('the longest a scoped access token may live; a later `expires_at` is a 400'),
  ACCESS_TOKEN_MAX_AGENTS: z.coerce
    .number()
    .int()
    .positive()
    .default(100)
    .describe(
      "how many agents one scoped access token may name in its policy (a sandboxed call's token too: its own, those it created, those sharing its tags)",
    ),
  LOG_LEVEL: z
    .enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'])
    .default('info')
    .describe('`trace`, `debug`, `info`, `warn`, `error`, `fatal` or `silent` (JSON logs on stdout)'),
  LOG_FORMAT: z
    .enum(['auto', 'json', 'pretty'])
    .default('auto')
    .describe(
      '`auto`: coloured, readable lines (pino-pretty) and a start-up banner on a terminal, JSON lines otherwise; `json` or `pretty` to choose',
    ),
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: flag
    .default(false)
    .describe(
      "`true` puts model calls' messages and replies in their spans (the GenAI conventions' switch); off, spans hold no message text, argument or secret. Traces go over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (the exporter reads the other `OTEL_EXPORTER_OTLP_*` variables itself)",
    ),
  TRACE_RETENTION_DAYS: z.coerce
    .number()
    .positive()
    .default(7)
    .describe(
      "how long the spans of runs' traces are kept in the database for the trace and step metrics routes",
    ),
  TRACE_STORE_BUFFER_MS: milliseconds
    .default(60_000)
    .describe(
      'how long the spans of a trace wait in memory for a span that names a run; a trace that names none (a health check, a read) is never stored',
    ),
  TRACE_STORE_FLUSH_MS: milliseconds
    .default(1_000)
    .describe('how often finished spans are written to the database'),
  TRACE_STORE_BATCH_SIZE: z.coerce
    .number()
    .int()
    .positive()
    .default(500)
    .describe('the most spans one write to the database takes'),
  TRACE_STORE_MAX_SPANS: z.coerce
    .number()
    .int()
    .positive()
    .default(20_000)
    .describe(
      'the most spans held in memory before they are written; past it the oldest unstored traces are dropped',
    ),

  METRICS_PORT: optional(
    z.coerce
      .number({ error: 'expected a port number' })
      .int('expected a whole number')
      .min(0, 'expected a port from 0 to 65535')
      .max(65535, 'expected a port from 0 to 65535'),
  ).describe(
    "port of `/metrics` (Prometheus: the server's metrics and the Temporal SDK's), on its own listener without a password; unset: no metrics are served; `0`: a free port, logged (see [Metrics](operations.md#metrics-and-dashboards))",
  ),
  METRICS_HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .describe('bind address of `/metrics` (beyond loopback only where the network is private to Prometheus)'),

  DATABASE_URL: optional(url).describe(
    'PostgreSQL connection string, e.g. `postgres://user:pass@host:5432/db`',
  ),
  DATABASE_POOL_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .default(20)
    .describe(
      'connections to PostgreSQL per process (API and workers each hold a pool); an activity holds one at a time, a memory edit that creates a block for its whole transaction',
    ),
  SECRETS_KEY: optional(secretsKey).describe(
    '32 bytes, base64 or hex, encrypting agent secrets and sandbox env vars at rest; unset: a key made once in `<DATA_DIR>/secrets.key` (see [Sandbox configs and secrets](operations.md#sandbox-configs-and-secrets))',
  ),

  TEMPORAL_ADDRESS: optional(hostPort).describe(
    '`host:port` of a Temporal frontend; unset starts the embedded dev server; TLS, API keys and profiles: [Temporal Cloud and mTLS](operations.md#temporal-cloud-and-mtls)',
  ),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default').describe('Temporal namespace'),
  TEMPORAL_PORT: port.default(7233).describe('gRPC port of the embedded dev server'),
  TEMPORAL_UI_PORT: port.default(8233).describe('Web UI port of the embedded dev server'),
  TEMPORAL_UI_URL: url
    .optional()
    .describe(
      "the Temporal Web UI's address, for links to a paused turn in the approval inbox; unset: the embedded dev server's UI, or no links with TEMPORAL_ADDRESS",
    ),
  TEMPORAL_CLI_PATH: optional(z.string()).describe('the `temporal` binary to run as the embedded dev server'),
  TEMPORAL_START_TIMEOUT_MS: milliseconds
    .default(60_000)
    .describe('how long the embedded dev server may take to answer'),
  TEMPORAL_CONNECT_TIMEOUT_MS: milliseconds
    .default(30_000)
    .describe('how long to keep retrying a connection to Temporal at start-up'),
  // Connecting to a secured cluster, as the `temporal` CLI does (src/temporal/env-config.ts).
  TEMPORAL_PROFILE: optional(z.string()).describe(
    'profile of the config file to use; one that does not exist stops start-up',
  ),
  TEMPORAL_CONFIG_FILE: optional(z.string()).describe(
    'a `temporal.toml` with `[profile.<name>]` tables, as the CLI writes them (`temporal config set --profile … --prop …`)',
  ),
  TEMPORAL_API_KEY: optional(z.string()).describe(
    'API key, sent as `authorization: Bearer <key>`; turns TLS on unless `TEMPORAL_TLS=false`',
  ),
  TEMPORAL_TLS: optional(temporalFlag).describe(
    '`true` connects with TLS (system CAs unless a CA is given), `false` forces plain text; the `TEMPORAL_TLS_*` files imply it',
  ),
  TEMPORAL_TLS_CLIENT_CERT_PATH: optional(z.string()).describe(
    'client certificate (PEM) for mTLS; needs `TEMPORAL_TLS_CLIENT_KEY_PATH`',
  ),
  TEMPORAL_TLS_CLIENT_KEY_PATH: optional(z.string()).describe(
    "the client certificate's private key (PEM, unencrypted)",
  ),
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: optional(z.string()).describe(
    "CA certificate (PEM) that signed the server's certificate",
  ),
  TEMPORAL_TLS_SERVER_NAME: optional(z.string()).describe(
    "name to verify the server's certificate against (and send as SNI), when it is not the host of the address",
  ),
  TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: optional(temporalFlag).describe(
    "not supported by Temporal's TypeScript SDK: `true` stops start-up; set `TEMPORAL_TLS_SERVER_NAME` instead",
  ),
  TASK_QUEUE_PREFIX: z
    .string()
    .default('')
    .describe(
      'prefix for the task queues (`<deployment>.agent`, `<deployment>.tools-sandbox`, `<deployment>.tools-mcp`); the deployment id already keeps deployments on one namespace apart (see [One conversation, one turn at a time](design.md#one-conversation-one-turn-at-a-time))',
    ),
  AGENT_MAX_QUEUED_MESSAGES: z.coerce
    .number()
    .int()
    .positive()
    .default(100)
    .describe('messages one agent holds queued behind the turn it runs; one more is a 409'),
  TURN_CONTEXT_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024)
    .default(256 * 1024)
    .describe(
      "largest an agent's tools and tool rules may be as a turn carries them (JSON bytes): a message or an answer to an agent past it is a 400 that says so, rather than a turn Temporal fails (it refuses a payload past 2 MB; see [Temporal's limits](operations.md#temporals-limits))",
    ),
  AGENT_SESSION_IDLE_MS: milliseconds
    .default(600_000)
    .describe(
      "an agent's session workflow ends after this long without a message (the next message starts a new one)",
    ),
  AGENT_LANE_LOOK_MS: milliseconds
    .min(100)
    .default(10_000)
    .describe(
      "how often a message waiting in a session for its conversation's lane looks whether the turn holding it is still alive (a turn that ends signals the session at once; this finds one terminated in the Temporal UI)",
    ),
  AGENT_LANE_START_GRACE_MS: milliseconds
    .default(30_000)
    .describe(
      'how long a turn the API took a lane for may take to appear in Temporal before the lane counts as lost (its API died between storing the run and starting the turn) and its runs end `failed`',
    ),
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce
    .number()
    .int()
    .min(0)
    .default(200)
    .describe(
      'workflows a worker keeps in memory between tasks: this bounds its memory however many turns are paused (an evicted one replays from its history when answered)',
    ),
  // Worker versioning (src/temporal/versioning.ts): the build id of this release, and who makes it current.
  WORKER_BUILD_ID: optional(
    z
      .string()
      .max(255)
      .regex(/^[^\s]+$/, { error: 'expected a build id without spaces' }),
  ).describe(
    "the build id of this release's worker deployment version; unset: package.json's version, plus `+<git commit>` when run from a git work tree (set it in images, which have no `.git`): see [Upgrades](upgrades.md#worker-versioning)",
  ),
  WORKER_VERSIONING: z
    .enum(['replay', 'manual'], { error: 'expected replay or manual' })
    .optional()
    .describe(
      'who replaces the current worker deployment version with a new build: `replay`, the build itself at start-up, once it replays the open histories of every long-lived workflow type; `manual`, an operator (`npm run upgrade:replay`, then the `temporal worker deployment set-current-version` the start-up log prints). Either way a first version becomes current by itself, and a build older than the current one never does: see [Upgrades](upgrades.md#worker-versioning)',
    ),
  WORKER_REPLAY_OPEN_MAX: z.coerce
    .number()
    .int()
    .min(1)
    .default(500)
    .describe(
      'open (running and paused) executions of each long-lived workflow type a build replays before it becomes current: all of them up to this many, else the oldest this many (`npm run upgrade:replay` too)',
    ),
  WORKER_REPLAY_CLOSED: z.coerce
    .number()
    .int()
    .min(0)
    .default(10)
    .describe('the most recently closed executions of each long-lived workflow type it replays besides'),

  MAX_REQUEST_BODY_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(10 * 1024 * 1024)
    .describe('largest accepted request body (larger: 413)'),
  MAX_JSON_DEPTH: z.coerce
    .number()
    .int()
    .positive()
    .default(64)
    .describe("deepest nesting of a request's JSON (deeper: 422)"),
  AGENT_FILE_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(50 * 1024 * 1024)
    .describe('largest agent file `POST /v1/agents/import` takes (larger: 413)'),
  STREAM_POLL_INTERVAL_MS: milliseconds
    .default(50)
    .describe(
      "how often a response looks for its run's new messages and stop while PostgreSQL's notifications of them (LISTEN) are unavailable",
    ),
  STREAM_FALLBACK_POLL_MS: milliseconds
    .default(1_000)
    .describe(
      "how often it looks anyway while they are available: it wakes at each notification (a response without a stream: at its run's stop)",
    ),
  STREAM_KEEPALIVE_MS: milliseconds
    .default(20_000)
    .describe('interval of keep-alive `ping` events on a stream (as Letta)'),
  HEALTH_CHECK_TIMEOUT_MS: milliseconds
    .default(3_000)
    .describe('how long `/v1/health/` waits for the database and Temporal'),
  SHUTDOWN_GRACE_MS: milliseconds
    .default(30_000)
    .describe(
      "on SIGTERM, SIGINT or SIGHUP, how long the model and tool calls running here may take to finish (the API refuses new turns at once); a call still running then is cut short, recorded nowhere, and retried on another worker or after the restart. Kubernetes' `terminationGracePeriodSeconds` (30 s by default) and `docker stop -t` (10 s by default) must cover `SHUTDOWN_TIMEOUT_MS`, or the process is killed first (see [Stopping and deploying](operations.md#stopping-and-deploying))",
    ),
  SHUTDOWN_TIMEOUT_MS: milliseconds
    .default(45_000)
    .describe(
      'how long a graceful shutdown may take in all before the process exits anyway: at least `SHUTDOWN_GRACE_MS` plus 10000 (calls cut short stop, then the API, the database and the embedded Temporal server close)',
    ),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: milliseconds
    .default(65_000)
    .describe(
      "how long the API keeps an idle keep-alive connection open; longer than clients' and load balancers' own idle timeouts, so that they close it first and never send a request on a connection the server is closing",
    ),

  // Folders and their files' ingestion (workflows/file-ingestion.ts).
  FILE_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(50 * 1024 * 1024)
    .describe('largest file a folder upload takes (larger: 413, nothing stored)'),
  FOLDER_MAX_FILES: z.coerce
    .number()
    .int()
    .positive()
    .default(1000)
    .describe('files one folder holds at most; one more upload is a 409'),
  FILE_CHUNK_SIZE: z.coerce
    .number()
    .int()
    .min(16)
    .default(300)
    .describe(
      "tokens per chunk of an ingested file (about 4 characters each; Letta's `embedding_chunk_size`), unless the folder was created with its own",
    ),
  FILE_CHUNK_OVERLAP: z.coerce
    .number()
    .int()
    .min(0)
    .default(50)
    .describe('tokens a chunk repeats of the one before it'),
  FILE_PARSE_TIMEOUT_MS: milliseconds
    .default(600_000)
    .describe('longest the parsing of one upload (PDF text extraction included) may take'),
  EMBEDDING_BATCH_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(2048)
    .default(32)
    .describe('chunks per embedding request during ingestion: one activity each'),
  EMBEDDING_MAX_ATTEMPTS: z.coerce
    .number()
    .int()
    .min(1)
    .default(10)
    .describe(
      'attempts of one embedding batch on rate limits (429), 5xx and dropped connections (backoff ×2, at most 60 s apart); then the file is `error`',
    ),
  EMBEDDING_RETRY_INITIAL_MS: milliseconds.default(1_000).describe('first backoff interval of those retries'),

  OPENAI_API_KEY: optional(z.string()).describe('key for `openai/<model>` models'),
  OPENAI_BASE_URL: optional(url).describe(
    'any OpenAI-compatible endpoint (Ollama, vLLM, LM Studio, llama.cpp server)',
  ),
  ANTHROPIC_API_KEY: optional(z.string()).describe('key for `anthropic/<model>` models'),
  ANTHROPIC_BASE_URL: optional(url).describe("another endpoint that speaks Anthropic's Messages API"),
  LETTA_DEFAULT_EMBEDDING_HANDLE: optional(
    z.string().regex(/^[^/]+\/.+$/, 'expected an embedding model handle, e.g. openai/text-embedding-3-small'),
  ).describe(
    "embedding model (`provider/model`) of agents, archives and folders created without `embedding` or `embedding_config` (Letta's setting of the same name); unset: such agents and archives keep their passages' text alone, found by the words of a search, and such a folder is a 400",
  ),
  MODEL_TIMEOUT_MS: milliseconds
    .default(120_000)
    .describe("longest one model call may take (the activity's start-to-close timeout adds 10 s)"),
  MODEL_MAX_ATTEMPTS: z.coerce
    .number()
    .int()
    .min(1)
    .default(5)
    .describe('attempts of a model call on rate limits, 5xx and dropped connections (backoff ×2)'),
  MODEL_RETRY_INITIAL_MS: milliseconds
    .default(1_000)
    .describe('first backoff interval of those retries (at most 60 s between attempts)'),
  TOOL_TIMEOUT_MS: milliseconds.default(180_000).describe('longest one tool call may take'),
  TOOL_MAX_ATTEMPTS: z.coerce
    .number()
    .int()
    .min(1)
    .default(3)
    .describe("attempts of a tool activity whose infrastructure failed (a tool's own error is a result)"),
  ACTIVITY_MAX_INTERRUPTIONS: z.coerce
    .number()
    .int()
    .min(0)
    .default(10)
    .describe(
      "how many times in a row a model or tool call whose last attempt was cut short by its process stopping (a deploy past `SHUTDOWN_GRACE_MS`, a crash: not the call's failure) is run again, beyond `MODEL_MAX_ATTEMPTS` and `TOOL_MAX_ATTEMPTS`",
    ),
  TOOL_RETURN_IMAGE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(DEFAULT_IMAGE_MAX_BYTES)
    .describe(
      "largest image a tool's return gives the model (an MCP tool's image content, a client tool's image part); a larger one reaches it as a line saying what it was, since model APIs refuse larger images",
    ),
  LOCAL_TOOL_CALLS: flag
    .default(false)
    .describe(
      '`true`: sandboxed, `run_code` and MCP tool calls run as local activities of the agent worker instead of regular activities on the `tools-sandbox` and `tools-mcp` task queues: faster per call, but hidden from Pending Activities and holding the turn\'s workflow task ("Where calls run")',
    ),
  MODEL_TRANSCRIPT_CACHE_MESSAGES: z.coerce
    .number()
    .int()
    .min(0)
    .default(50_000)
    .describe(
      "messages of agents' transcripts a worker keeps between model calls, so that a step reads only the messages since the last (`0`: every step reads the whole transcript; see [A model call's transcript](design.md#a-model-calls-transcript))",
    ),
  LOCAL_MODEL_CALLS: flag
    .default(false)
    .describe(
      '`true`: model calls run as local activities of the agent worker instead of regular activities that heartbeat ("Where calls run")',
    ),
  STEP_SUMMARY_MESSAGE_CHARS: z.coerce
    .number()
    .int()
    .min(0)
    .max(500)
    .default(80)
    .describe(
      "how much of a turn's message its summary in the Temporal UI shows (`support-bot: Where is my order?`), the only text of a message a history holds; `0`: the agent's name alone",
    ),
  STEP_TASK_TIMEOUT_MS: optional(milliseconds.min(1_000)).describe(
    "workflow task timeout of an agent turn (at least 1000); with the local switches above, a local call holds the turn's task, which the worker renews at 80% of this",
  ),
  ACTIVITY_HEARTBEAT_TIMEOUT_MS: milliseconds
    .default(20_000)
    .describe(
      'a model or tool call whose worker stops heartbeating this long is retried on another worker; also a tool call\'s claim lease ("One call, one runner at a time")',
    ),
  E2B_API_KEY: optional(z.string()).describe(
    'key for E2B; required with `SANDBOX_TYPE=e2b`, and never selects E2B by itself',
  ),
  E2B_TEMPLATE: z
    .string()
    .min(1)
    .default('base')
    .describe(
      'E2B template the sandboxes start from (it needs `python3`; bake heavy dependencies into your own)',
    ),
  E2B_SANDBOX_TIMEOUT_MS: milliseconds
    .default(300_000)
    .describe("how long an E2B sandbox lives after its last call (at least a tool call's timeout)"),
  E2B_SANDBOX_REUSE: flag
    .default(false)
    .describe(
      '`false`: a fresh E2B sandbox per call, killed after it (as Letta); `true`: keep sandboxes for later calls of the same configuration (faster; files and processes a call leaves are then seen by the next call of the same agent and tool)',
    ),
  E2B_CODE_TEMPLATE: optional(z.string().min(1)).describe(
    "E2B template `run_code` starts from when `E2B_API_KEY` is set (E2B's code interpreter by default)",
  ),
  MODAL_TOKEN_ID: optional(z.string()).describe(
    'Modal token id; with `MODAL_TOKEN_SECRET` it turns Modal on for tools that ask for it (`metadata_.sandbox = "modal"`); required with `SANDBOX_TYPE=modal`',
  ),
  MODAL_TOKEN_SECRET: optional(z.string()).describe('Modal token secret'),
  MODAL_ENVIRONMENT: optional(z.string().min(1)).describe('Modal environment the sandboxes run in'),
  MODAL_APP_NAME: z
    .string()
    .min(1)
    .default('letta-tools')
    .describe('Modal app the sandboxes belong to (made if missing)'),
  MODAL_PYTHON_IMAGE: z
    .string()
    .min(1)
    .default('python:3.12-slim')
    .describe(
      'registry image Python tools run in (their pip requirements are installed on top, once per set)',
    ),
  MODAL_NODE_IMAGE: z
    .string()
    .min(1)
    .default('node:22-slim')
    .describe(
      'registry image TypeScript tools run in (their npm requirements are installed on top, once per set)',
    ),
  MODAL_SANDBOX_REUSE: flag
    .default(true)
    .describe(
      "keep a Modal sandbox for the next calls of the same configuration (image and the tool's whole environment, so the same agent and tool); `false`: one sandbox per call, terminated after it",
    ),
  MODAL_SANDBOX_IDLE_MS: milliseconds
    .default(300_000)
    .describe(
      "a kept Modal sandbox without a call for this long is terminated (also Modal's idle timeout, should this server die)",
    ),
  MODAL_SANDBOX_LIFETIME_MS: milliseconds
    .default(3_600_000)
    .describe(
      "the longest a Modal sandbox lives (Modal's sandbox timeout); a sandbox near its end takes no new call",
    ),
  PYTHON_PATH: z
    .string()
    .min(1)
    .default('python3')
    .describe("the Python that reads Python tools' source to derive their schemas (standard library only)"),
  SCHEMA_GENERATION_TIMEOUT_MS: milliseconds
    .default(10_000)
    .describe("longest the reading of one tool's source may take"),
  SANDBOX_TYPE: z
    .enum(['local', 'local-unsafe', 'e2b', 'modal'])
    .default('local')
    .describe(
      'where custom tools run: `local` (bubblewrap), `local-unsafe`, `e2b` (see [E2B sandbox](operations.md#e2b-sandbox)), or `modal` (every custom tool asks for Modal, see [Modal sandbox](operations.md#modal-sandbox))',
    ),
  SANDBOX_BWRAP_PATH: z
    .string()
    .min(1)
    .default('bwrap')
    .describe('bubblewrap, which isolates custom tools in the local sandbox and stdio MCP servers'),
  SANDBOX_CPU_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .default(180)
    .describe('CPU seconds a tool process may use (RLIMIT_CPU)'),
  SANDBOX_MEMORY_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024 * 1024)
    .describe(
      'address space of a Python tool (RLIMIT_AS), and the memory cgroup limit where cgroups are writable',
    ),
  SANDBOX_FILE_SIZE_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * 1024 * 1024)
    .describe('largest file a tool may write (RLIMIT_FSIZE)'),
  SANDBOX_TMP_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * 1024 * 1024)
    .describe(
      "size of each of the sandbox's private tmpfs mounts, `/tmp`, `/dev/shm` and the work folder `/work` (fresh per call)",
    ),
  SANDBOX_OPEN_FILES: z.coerce
    .number()
    .int()
    .positive()
    .default(256)
    .describe('open files per tool process (RLIMIT_NOFILE)'),
  SANDBOX_MAX_PROCESSES: z.coerce
    .number()
    .int()
    .positive()
    .default(128)
    .describe('processes: RLIMIT_NPROC of the sandbox uid, and the pids cgroup limit where writable'),
  SANDBOX_WARM_POOL_SIZE: z.coerce
    .number()
    .int()
    .min(0)
    .default(2)
    .describe(
      'idle warm runners kept per environment (a sandboxed fork server per venv); `0`: a cold sandbox per call',
    ),
  SANDBOX_WARM_IDLE_MS: milliseconds
    .default(300_000)
    .describe('an idle warm runner is stopped after this long'),
  SANDBOX_PYTHON: z
    .string()
    .min(1)
    .default('/usr/bin/python3')
    .describe(
      'the Python custom tools run on inside the sandbox (under `/usr`, the only system folder the sandbox sees)',
    ),
  SANDBOX_MAX_OUTPUT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024)
    .describe(
      'a tool that prints more than this (stdout and stderr together) is stopped with an `OutputLimitError`',
    ),
  SANDBOX_OUTPUT_KEEP_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * 1024)
    .describe(
      "most of each of a tool's stdout and stderr sent back: its first and last halves, the middle replaced by `[... N bytes cut ...]`",
    ),
  SANDBOX_MAX_RESULT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(16 * 1024 * 1024)
    .describe(
      'largest result a tool may send back (its return, already cut at `return_char_limit` inside the sandbox, and its memory edits); past it the tool is stopped',
    ),
  SANDBOX_ENV_DIR: optional(z.string()).describe(
    "where the venvs and npm sets of tools with requirements live, one per set of requirements, built once and shared (default `<DATA_DIR>/sandbox-envs`; when the server runs as root and the sandbox's user, nobody, cannot enter `DATA_DIR`, a folder of its own under `/var/cache/letta-temporal`); every folder on the way must be enterable by others, which `--check` checks",
  ),
  SANDBOX_PIP_PYTHON: optional(z.string()).describe(
    "the Python whose pip (≥ 22.3) installs tools' requirements into their venvs; unset: `/usr/bin/python3` or else `python3`, whichever has one",
  ),
  PIP_INDEX_URL: optional(url).describe(
    "package index for tools' requirements (`https://…`, or `file://` for a PEP 503 folder); pip's own config and `PIP_*` variables are ignored",
  ),
  PIP_FIND_LINKS: optional(z.string()).describe(
    "comma-separated folders or URLs of wheels for tools' requirements, looked in besides the index (as pip's own `--find-links`)",
  ),
  PIP_NO_INDEX: flag
    .default(false)
    .describe(
      "`true`: tools' requirements come from `PIP_FIND_LINKS` alone, never an index (offline installs)",
    ),
  PIP_INSTALL_TIMEOUT_MS: milliseconds
    .default(300_000)
    .describe("longest the install of one tool's requirements may take"),
  SANDBOX_ENV_MAX_AGE_MS: milliseconds
    .default(7 * 24 * 60 * 60 * 1000)
    .describe('a tool venv unused this long (7 days) is removed when venvs are collected'),
  SANDBOX_NODE: z
    .string()
    .min(1)
    .default(sandboxNode())
    .describe(
      "the node TypeScript tools run on in the sandbox (under `/usr`, as `/usr/bin/node` and the Docker image's are; a server's node elsewhere, nvm's say, gives way to `/usr/bin/node` or `/usr/local/bin/node` when there is one)",
    ),
  SANDBOX_NODE_MAX_OLD_SPACE_MB: z.coerce
    .number()
    .int()
    .positive()
    .default(512)
    .describe('V8 heap limit of a TypeScript tool (`--max-old-space-size`)'),
  NPM_REGISTRY_URL: optional(url).describe(
    "the registry TypeScript tools' `npm_requirements` are installed from",
  ),
  NPM_INSTALL_TIMEOUT_MS: milliseconds
    .default(300_000)
    .describe('longest the install of one set of `npm_requirements` may take'),
  MCP_CONNECT_TIMEOUT_MS: milliseconds
    .default(30_000)
    .describe('longest connecting to an MCP server may take (a registration past it: 408)'),
  MCP_LIST_TIMEOUT_MS: milliseconds
    .default(30_000)
    .describe("longest listing an MCP server's tools may take"),
  MCP_CALL_TIMEOUT_MS: milliseconds
    .default(60_000)
    .describe(
      "longest one MCP tool call (or its task) may take, unless the tool's `metadata_.timeout_seconds` or its server's `tool_timeout_seconds` says otherwise",
    ),
  MCP_TASK_POLL_MS: milliseconds
    .default(1_000)
    .describe(
      "how often the status of a tool call's task is asked for when its MCP server suggests no interval",
    ),
  MCP_RECONNECT_INITIAL_MS: milliseconds
    .default(500)
    .describe(
      'wait before connecting again to an MCP server whose last connection attempt failed; doubles per failure',
    ),
  MCP_RECONNECT_MAX_MS: milliseconds.default(30_000).describe('longest of those waits'),
  MCP_ELICITATION_HOLD_MS: milliseconds
    .max(2_000_000_000)
    .default(86_400_000)
    .describe(
      "how long a worker keeps an MCP call open while its step waits for an answer to the server's elicitation; past it the server is told the call is cancelled",
    ),
  MCP_INPUT_ROUNDS: z.coerce
    .number()
    .int()
    .positive()
    .default(10)
    .describe(
      "most input-required results in a row one MCP tool call (2026-07-28 revision) answers by calling the tool again; past them the call's result is an error",
    ),
  MCP_STDIO: z
    .enum(['sandboxed', 'off', 'host'])
    .default('sandboxed')
    .describe(
      'where stdio MCP servers run: `sandboxed` (bubblewrap, see [MCP servers](operations.md#mcp-servers)), `off` (refused: 400), or `host` (unconfined; warned about)',
    ),
  MCP_STDIO_READ_ONLY_PATHS: optional(pathList).describe(
    'more host folders shown read-only to stdio MCP servers, separated by `:` (`DATA_DIR` and `SANDBOX_ENV_DIR` are never shown); a command or script argument outside them is refused (400)',
  ),
  MCP_STDIO_MEMORY_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024 * 1024)
    .describe(
      "memory of one stdio MCP server: its memory cgroup's limit where cgroups are writable, else RLIMIT_DATA of each of its processes",
    ),
  MCP_STDIO_MAX_PROCESSES: z.coerce
    .number()
    .int()
    .positive()
    .default(256)
    .describe(
      "processes (threads too) of one stdio MCP server: its pids cgroup's limit, else RLIMIT_NPROC of their uid, shared by all stdio servers",
    ),
  MCP_STDIO_MAX_MESSAGE_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * 1024 * 1024)
    .describe(
      "the longest message a stdio MCP server may send (a tool's whole result is one; it is cut at the tool's `return_char_limit` after)",
    ),
  MCP_STDIO_TMP_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(256 * 1024 * 1024)
    .describe(
      'size of each private tmpfs of a stdio MCP server: `/tmp`, and `/work`, its HOME and working folder',
    ),
  MCP_OAUTH_STATE_TTL_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .default(600)
    .describe(
      "how long an OAuth-protected MCP server's authorization URL stays good: its callback after that is refused",
    ),
  MCP_OAUTH_REFRESH_MARGIN_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(60)
    .describe("an MCP server's OAuth access token that expires within this is renewed before it is sent"),
  MCP_OAUTH_FETCH_TIMEOUT_MS: milliseconds
    .default(10_000)
    .describe('longest one OAuth request (metadata, client registration, token) for an MCP server may take'),
  MCP_OAUTH_MAX_RESPONSE_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024)
    .describe('largest answer to an OAuth request for an MCP server that is read'),
  MCP_OAUTH_MAX_REDIRECTS: z.coerce
    .number()
    .int()
    .min(0)
    .default(5)
    .describe(
      'redirects one OAuth request for an MCP server follows, each judged by `OUTBOUND_ALLOW_PRIVATE`',
    ),
  FETCH_WEBPAGE_TIMEOUT_MS: milliseconds
    .default(30_000)
    .describe('`fetch_webpage`: longest a page may take to arrive, redirects included'),
  FETCH_WEBPAGE_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(5 * 1024 * 1024)
    .describe('`fetch_webpage`: the most of a page read, decompressed (the rest is dropped)'),
  FETCH_WEBPAGE_MAX_REDIRECTS: z.coerce
    .number()
    .int()
    .min(0)
    .default(10)
    .describe('`fetch_webpage`: redirects followed at most; each target is checked as the first URL is'),
  OUTBOUND_ALLOW_PRIVATE: allowList.describe(
    'host names, IPs and CIDR ranges (comma-separated) a model-chosen URL (`fetch_webpage`) may reach although private, e.g. `10.0.0.0/8,wiki.internal`',
  ),
  SCHEDULE_CATCHUP_WINDOW_MS: z.coerce
    .number({ error: 'expected milliseconds' })
    .int()
    .min(10_000, { error: 'expected at least 10000 (Temporal’s least catch-up window)' })
    .default(60_000)
    .describe(
      'a recurring scheduled message whose firing was missed (everything down at the time) still fires this late; older missed firings are skipped (one-time messages always fire once, however late); at least 10000',
    ),
  SCHEDULES_PER_AGENT_MAX: z.coerce
    .number()
    .int()
    .min(1)
    .default(100)
    .describe('scheduled messages one agent may have (more: 409)'),
  WEBHOOK_SECRET: optional(z.string().min(16)).describe(
    'the key that signs every webhook (`X-Letta-Signature`, see [Triggers](operations.md#triggers)); at least 16 characters; unset, one is made on first use and kept in the database',
  ),
  APPROVAL_WEBHOOK_URL: optional(z.string().url()).describe(
    'where approval notices go for agents without their own `metadata.approval_webhook_url` (see [Triggers](operations.md#triggers)); it passes the address checks of `OUTBOUND_ALLOW_PRIVATE` as every webhook does',
  ),
  APPROVAL_LINK_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(7 * 24 * 3600)
    .describe(
      "how long the signed approve / deny links of an approval notice work (never beyond the pause's own expiry); 0: notices carry no links",
    ),
  WEBHOOK_TIMEOUT_MS: milliseconds
    .default(5_000)
    .describe("one delivery attempt of a webhook (as Letta's callbacks)"),
  WEBHOOK_MAX_ATTEMPTS: z.coerce
    .number()
    .int()
    .min(1)
    .default(10)
    .describe('attempts at a webhook before its delivery workflow gives up (the run keeps the last error)'),
  WEBHOOK_RETRY_INITIAL_MS: milliseconds
    .default(1_000)
    .describe("wait before a webhook's second attempt; doubled each time"),
  WEBHOOK_RETRY_MAX_MS: milliseconds
    .default(60_000)
    .describe('longest wait between two attempts at a webhook'),
  AGENT_MESSAGE_TIMEOUT_MS: milliseconds
    .default(600_000)
    .describe('how long a message to another agent waits for its reply'),
  AGENT_MESSAGE_LOOK_MS: milliseconds
    .min(100)
    .default(30_000)
    .describe(
      "how often a message to another agent that waits for its reply looks whether the recipient's turn still runs (a turn signals the waiting call when its run stops; this finds one terminated in the Temporal UI)",
    ),
  AGENT_MESSAGE_MAX_DEPTH: z.coerce
    .number()
    .int()
    .min(1)
    .default(5)
    .describe('the most agents a chain of agent-to-agent messages passes through'),
  AGENT_MESSAGE_MAX_STEPS: z.coerce
    .number()
    .int()
    .min(1)
    .default(50)
    .describe('`max_steps` of the turn a message from another agent starts'),
  EXA_API_KEY: optional(z.string()).describe(
    "Exa's key for `web_search` and `fetch_webpage` (an agent's secret `EXA_API_KEY` comes first)",
  ),
  EXA_BASE_URL: z.string().url().default('https://api.exa.ai').describe("where Exa's API is"),
  EXA_TIMEOUT_MS: milliseconds.default(60_000).describe('longest one request to Exa may take'),
  FILES_MAX_OPEN: optional(z.coerce.number().int().min(1).max(1000)).describe(
    "files of its folders an agent keeps open at once unless it sets `max_files_open` (unset: Letta's default for its context window: 3 up to 8k tokens, 5 to 32k, 10 to 200k, 15 beyond); one more opened closes the least recently used",
  ),
  FILE_VIEW_WINDOW_CHARS: optional(z.coerce.number().int().positive().max(2147483647)).describe(
    "characters of each open file shown in an agent's context unless it sets `per_file_view_window_char_limit` (unset: Letta's default for its context window: 5,000 up to 8k tokens, 15,000 to 32k, 25,000 to 128k, 40,000 beyond)",
  ),
  GREP_FILES_PAGE_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(20)
    .describe("matches `grep_files` shows per call (Letta's page); the model pages with `offset`"),
});

export type Config = z.infer<typeof ConfigSchema> & {
  dataDir: string;
  /**
   * The external Temporal and how to connect to it (TLS, API key), from the environment and a
   * temporal.toml profile; unset for the embedded dev server. TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE
   * then hold the effective address and namespace, wherever they came from.
   */
  temporal?: TemporalTarget;
};

/**
 * What a graceful stop needs past its grace: the calls cut short stop and let go of their claims (the
 * workers' own margin, src/temporal/worker.ts), then the API, the database and the embedded Temporal
 * server close.
 */
export const SHUTDOWN_MARGIN_MS = 10_000;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the environment; throws one ConfigError whose message names every bad variable on one line. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0]);
      const value = isHidden(name) ? '(hidden)' : JSON.stringify(env[name] ?? '');
      return `${name}=${value}: ${issue.message}`;
    });
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  if (parsed.data.SHUTDOWN_TIMEOUT_MS < parsed.data.SHUTDOWN_GRACE_MS + SHUTDOWN_MARGIN_MS)
    throw new ConfigError(
      `Invalid configuration: SHUTDOWN_TIMEOUT_MS=${parsed.data.SHUTDOWN_TIMEOUT_MS}: must be at least SHUTDOWN_GRACE_MS (${parsed.data.SHUTDOWN_GRACE_MS}) + ${SHUTDOWN_MARGIN_MS}, so that the calls cut short when the grace ends can stop and the server close before the process exits anyway`,
    );
  // E2B runs only when chosen, and then it needs its key (the key alone never selects it).
  if (parsed.data.SANDBOX_TYPE === 'e2b' && !parsed.data.E2B_API_KEY)
    throw new ConfigError('Invalid configuration: E2B_API_KEY="": required with SANDBOX_TYPE=e2b');
  if (parsed.data.SANDBOX_TYPE === 'modal') {
    if (!parsed.data.MODAL_TOKEN_ID || !parsed.data.MODAL_TOKEN_SECRET)
      throw new ConfigError(
        'Invalid configuration: MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are required with SANDBOX_TYPE=modal',
      );
    const unsupported = modalUnsupportedReason();
    if (unsupported) throw new ConfigError(`Invalid configuration: SANDBOX_TYPE=modal: ${unsupported}`);
  }
  let temporal: TemporalTarget | undefined;
  try {
    temporal = temporalTarget(env);
  } catch (error) {
    if (error instanceof TemporalSettingsError)
      throw new ConfigError(`Invalid configuration: ${error.message}`);
    throw error;
  }
  return {
    ...parsed.data,
    dataDir: path.resolve(parsed.data.DATA_DIR),
    ...(temporal && { temporal, TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace }),
  };
}
