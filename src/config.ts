import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
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

export const ConfigSchema = z.object({
  PORT: port.default(8283),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('./data'),
  LETTA_SERVER_PASSWORD: optional(z.string()),
  ALLOWED_HOSTS: list,
  CORS_ORIGINS: originList,
  AUTH_FAILURE_LIMIT: z.coerce.number().int().positive().default(20),
  AUTH_FAILURE_WINDOW_MS: milliseconds.default(60_000),
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),

  DATABASE_URL: optional(url),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).default(20),
  SECRETS_KEY: optional(secretsKey),

  TEMPORAL_ADDRESS: optional(hostPort),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_PORT: port.default(7233),
  TEMPORAL_UI_PORT: port.default(8233),
  TEMPORAL_CLI_PATH: optional(z.string()),
  TEMPORAL_START_TIMEOUT_MS: milliseconds.default(60_000),
  TEMPORAL_CONNECT_TIMEOUT_MS: milliseconds.default(30_000),
  // Connecting to a secured cluster, as the `temporal` CLI does (src/temporal/env-config.ts).
  TEMPORAL_PROFILE: optional(z.string()),
  TEMPORAL_CONFIG_FILE: optional(z.string()),
  TEMPORAL_API_KEY: optional(z.string()),
  TEMPORAL_TLS: optional(temporalFlag),
  TEMPORAL_TLS_CLIENT_CERT_PATH: optional(z.string()),
  TEMPORAL_TLS_CLIENT_KEY_PATH: optional(z.string()),
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: optional(z.string()),
  TEMPORAL_TLS_SERVER_NAME: optional(z.string()),
  TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: optional(temporalFlag),
  TASK_QUEUE_PREFIX: z.string().default(''),
  AGENT_MAX_QUEUED_MESSAGES: z.coerce.number().int().positive().default(100),
  AGENT_SESSION_IDLE_MS: milliseconds.default(600_000),
  AGENT_LANE_LOOK_MS: milliseconds.min(100).default(10_000),
  AGENT_LANE_START_GRACE_MS: milliseconds.default(30_000),
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(0).default(200),
  // Worker versioning (src/temporal/versioning.ts): the build id of this release, and who makes it current.
  WORKER_BUILD_ID: optional(
    z
      .string()
      .max(255)
      .regex(/^[^\s]+$/, { error: 'expected a build id without spaces' }),
  ),
  WORKER_VERSIONING: z.enum(['replay', 'manual'], { error: 'expected replay or manual' }).default('replay'),
  /** How many running and recent step and session histories a new build replays before it becomes current. */
  WORKER_REPLAY_SAMPLE: z.coerce.number().int().min(1).default(50),

  MAX_REQUEST_BODY_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(10 * 1024 * 1024),
  MAX_JSON_DEPTH: z.coerce.number().int().positive().default(64),
  AGENT_FILE_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(50 * 1024 * 1024),
  STREAM_POLL_INTERVAL_MS: milliseconds.default(50),
  STREAM_FALLBACK_POLL_MS: milliseconds.default(1_000),
  STREAM_KEEPALIVE_MS: milliseconds.default(20_000),
  HEALTH_CHECK_TIMEOUT_MS: milliseconds.default(3_000),
  SHUTDOWN_TIMEOUT_MS: milliseconds.default(15_000),

  // Folders and their files' ingestion (workflows/file-ingestion.ts).
  FILE_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(50 * 1024 * 1024),
  FOLDER_MAX_FILES: z.coerce.number().int().positive().default(1000),
  FILE_CHUNK_SIZE: z.coerce.number().int().min(16).default(300),
  FILE_CHUNK_OVERLAP: z.coerce.number().int().min(0).default(50),
  FILE_PARSE_TIMEOUT_MS: milliseconds.default(600_000),
  EMBEDDING_BATCH_SIZE: z.coerce.number().int().min(1).max(2048).default(32),
  EMBEDDING_MAX_ATTEMPTS: z.coerce.number().int().min(1).default(10),
  EMBEDDING_RETRY_INITIAL_MS: milliseconds.default(1_000),

  OPENAI_API_KEY: optional(z.string()),
  OPENAI_BASE_URL: optional(url),
  ANTHROPIC_API_KEY: optional(z.string()),
  ANTHROPIC_BASE_URL: optional(url),
  MODEL_TIMEOUT_MS: milliseconds.default(120_000),
  MODEL_MAX_ATTEMPTS: z.coerce.number().int().min(1).default(5),
  MODEL_RETRY_INITIAL_MS: milliseconds.default(1_000),
  TOOL_TIMEOUT_MS: milliseconds.default(180_000),
  TOOL_MAX_ATTEMPTS: z.coerce.number().int().min(1).default(3),
  LOCAL_TOOL_CALLS: flag.default(false),
  LOCAL_MODEL_CALLS: flag.default(false),
  STEP_SUMMARY_MESSAGE_CHARS: z.coerce.number().int().min(0).max(500).default(80),
  STEP_TASK_TIMEOUT_MS: optional(milliseconds.min(1_000)),
  ACTIVITY_HEARTBEAT_TIMEOUT_MS: milliseconds.default(20_000),
  E2B_API_KEY: optional(z.string()),
  E2B_TEMPLATE: z.string().min(1).default('base'),
  E2B_SANDBOX_TIMEOUT_MS: milliseconds.default(300_000),
  E2B_SANDBOX_REUSE: flag.default(false),
  E2B_CODE_TEMPLATE: optional(z.string().min(1)),
  MODAL_TOKEN_ID: optional(z.string()),
  MODAL_TOKEN_SECRET: optional(z.string()),
  MODAL_ENVIRONMENT: optional(z.string().min(1)),
  MODAL_APP_NAME: z.string().min(1).default('letta-tools'),
  MODAL_PYTHON_IMAGE: z.string().min(1).default('python:3.12-slim'),
  MODAL_NODE_IMAGE: z.string().min(1).default('node:22-slim'),
  MODAL_SANDBOX_REUSE: flag.default(true),
  MODAL_SANDBOX_IDLE_MS: milliseconds.default(300_000),
  MODAL_SANDBOX_LIFETIME_MS: milliseconds.default(3_600_000),
  PYTHON_PATH: z.string().min(1).default('python3'),
  SCHEMA_GENERATION_TIMEOUT_MS: milliseconds.default(10_000),
  SANDBOX_TYPE: z.enum(['local', 'local-unsafe', 'e2b', 'modal']).default('local'),
  SANDBOX_BWRAP_PATH: z.string().min(1).default('bwrap'),
  SANDBOX_CPU_SECONDS: z.coerce.number().int().positive().default(180),
  SANDBOX_MEMORY_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024 * 1024),
  SANDBOX_FILE_SIZE_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * 1024 * 1024),
  SANDBOX_TMP_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * 1024 * 1024),
  SANDBOX_OPEN_FILES: z.coerce.number().int().positive().default(256),
  SANDBOX_MAX_PROCESSES: z.coerce.number().int().positive().default(128),
  SANDBOX_WARM_POOL_SIZE: z.coerce.number().int().min(0).default(2),
  SANDBOX_WARM_IDLE_MS: milliseconds.default(300_000),
  SANDBOX_PYTHON: z.string().min(1).default('/usr/bin/python3'),
  SANDBOX_MAX_OUTPUT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  SANDBOX_OUTPUT_KEEP_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * 1024),
  SANDBOX_MAX_RESULT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(16 * 1024 * 1024),
  SANDBOX_ENV_DIR: optional(z.string()),
  SANDBOX_PIP_PYTHON: optional(z.string()),
  PIP_INDEX_URL: optional(url),
  PIP_FIND_LINKS: optional(z.string()),
  PIP_INSTALL_TIMEOUT_MS: milliseconds.default(300_000),
  SANDBOX_ENV_MAX_AGE_MS: milliseconds.default(7 * 24 * 60 * 60 * 1000),
  SANDBOX_NODE: z.string().min(1).default(sandboxNode()),
  SANDBOX_NODE_MAX_OLD_SPACE_MB: z.coerce.number().int().positive().default(512),
  NPM_REGISTRY_URL: optional(url),
  NPM_INSTALL_TIMEOUT_MS: milliseconds.default(300_000),
  MCP_CONNECT_TIMEOUT_MS: milliseconds.default(30_000),
  MCP_LIST_TIMEOUT_MS: milliseconds.default(30_000),
  MCP_CALL_TIMEOUT_MS: milliseconds.default(60_000),
  MCP_RECONNECT_INITIAL_MS: milliseconds.default(500),
  MCP_RECONNECT_MAX_MS: milliseconds.default(30_000),
  MCP_STDIO: z.enum(['sandboxed', 'off', 'host']).default('sandboxed'),
  MCP_STDIO_READ_ONLY_PATHS: optional(pathList),
  MCP_STDIO_MEMORY_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024 * 1024),
  MCP_STDIO_MAX_PROCESSES: z.coerce.number().int().positive().default(256),
  MCP_STDIO_MAX_MESSAGE_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * 1024 * 1024),
  MCP_STDIO_TMP_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(256 * 1024 * 1024),
  FETCH_WEBPAGE_TIMEOUT_MS: milliseconds.default(30_000),
  FETCH_WEBPAGE_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(5 * 1024 * 1024),
  FETCH_WEBPAGE_MAX_REDIRECTS: z.coerce.number().int().min(0).default(10),
  OUTBOUND_ALLOW_PRIVATE: allowList,
  SCHEDULE_CATCHUP_WINDOW_MS: z.coerce
    .number({ error: 'expected milliseconds' })
    .int()
    .min(10_000, { error: 'expected at least 10000 (Temporal’s least catch-up window)' })
    .default(60_000),
  SCHEDULES_PER_AGENT_MAX: z.coerce.number().int().min(1).default(100),
  WEBHOOK_SECRET: optional(z.string().min(16)),
  APPROVAL_WEBHOOK_URL: optional(z.string().url()),
  WEBHOOK_TIMEOUT_MS: milliseconds.default(5_000),
  WEBHOOK_MAX_ATTEMPTS: z.coerce.number().int().min(1).default(10),
  WEBHOOK_RETRY_INITIAL_MS: milliseconds.default(1_000),
  WEBHOOK_RETRY_MAX_MS: milliseconds.default(60_000),
  AGENT_MESSAGE_TIMEOUT_MS: milliseconds.default(600_000),
  AGENT_MESSAGE_MAX_DEPTH: z.coerce.number().int().min(1).default(5),
  AGENT_MESSAGE_MAX_STEPS: z.coerce.number().int().min(1).default(50),
  EXA_API_KEY: optional(z.string()),
  EXA_BASE_URL: z.string().url().default('https://api.exa.ai'),
  EXA_TIMEOUT_MS: milliseconds.default(60_000),
  /** Files an agent keeps open at once unless it says (unset: Letta's default for its context window). */
  FILES_MAX_OPEN: optional(z.coerce.number().int().min(1).max(1000)),
  /** Characters of each open file in an agent's context unless it says (unset: as FILES_MAX_OPEN). */
  FILE_VIEW_WINDOW_CHARS: optional(z.coerce.number().int().positive().max(2147483647)),
  /** grep_files matches per page (Letta: 20). */
  GREP_FILES_PAGE_SIZE: z.coerce.number().int().min(1).max(1000).default(20),
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
