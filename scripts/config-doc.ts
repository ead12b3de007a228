/**
 * docs/configuration.md from the configuration schema (src/config.ts): every variable, its default and its
 * description (the schema's `.describe`), grouped. `npm run docs:config` writes the page;
 * test/config-doc.test.ts fails when the page differs from what this renders.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ConfigSchema, shownDefaults } from '../src/config';

type Name = keyof typeof ConfigSchema.shape;

/** The page's sections, in order; every variable of the schema is in exactly one. */
export const GROUPS: { title: string; intro?: string; names: Name[] }[] = [
  {
    title: 'Server and API',
    names: [
      'PORT',
      'HOST',
      'LETTA_PUBLIC_URL',
      'API_FORWARD_RETRY_MS',
      'LETTA_SERVER_PASSWORD',
      'ALLOWED_HOSTS',
      'CORS_ORIGINS',
      'AUTH_FAILURE_LIMIT',
      'AUTH_FAILURE_WINDOW_MS',
      'ACCESS_TOKEN_DEFAULT_TTL_MS',
      'ACCESS_TOKEN_MAX_TTL_MS',
      'ACCESS_TOKEN_MAX_AGENTS',
      'DATA_DIR',
      'LOG_LEVEL',
      'LOG_FORMAT',
      'METRICS_PORT',
      'METRICS_HOST',
      'MAX_REQUEST_BODY_BYTES',
      'MAX_JSON_DEPTH',
      'AGENT_FILE_MAX_BYTES',
      'HEALTH_CHECK_TIMEOUT_MS',
      'SHUTDOWN_GRACE_MS',
      'SHUTDOWN_TIMEOUT_MS',
      'HTTP_KEEP_ALIVE_TIMEOUT_MS',
      'STREAM_POLL_INTERVAL_MS',
      'STREAM_FALLBACK_POLL_MS',
      'STREAM_KEEPALIVE_MS',
    ],
  },
  {
    title: 'Traces',
    intro:
      'OpenTelemetry traces (docs/operations.md, "Traces"): exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, with the exporter\'s other `OTEL_EXPORTER_OTLP_*` variables and `OTEL_SERVICE_NAME`/`OTEL_RESOURCE_ATTRIBUTES`; the spans of runs\' traces are kept in the database either way.',
    names: [
      'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT',
      'TRACE_RETENTION_DAYS',
      'TRACE_STORE_BUFFER_MS',
      'TRACE_STORE_FLUSH_MS',
      'TRACE_STORE_BATCH_SIZE',
      'TRACE_STORE_MAX_SPANS',
    ],
  },
  { title: 'Database and secrets', names: ['DATABASE_URL', 'DATABASE_POOL_SIZE', 'SECRETS_KEY'] },
  {
    title: 'Temporal',
    names: [
      'TEMPORAL_ADDRESS',
      'TEMPORAL_NAMESPACE',
      'TEMPORAL_PORT',
      'TEMPORAL_UI_PORT',
      'TEMPORAL_UI_URL',
      'TEMPORAL_CLI_PATH',
      'TEMPORAL_START_TIMEOUT_MS',
      'TEMPORAL_CONNECT_TIMEOUT_MS',
      'TASK_QUEUE_PREFIX',
      'WORKER_MAX_CACHED_WORKFLOWS',
      'WORKER_BUILD_ID',
      'WORKER_VERSIONING',
      'WORKER_REPLAY_OPEN_MAX',
      'WORKER_REPLAY_CLOSED',
    ],
  },
  {
    title: 'Temporal connection: TLS, API keys, profiles',
    intro:
      "Temporal's own environment configuration, as the `temporal` CLI reads it; see [Temporal Cloud and mTLS](operations.md#temporal-cloud-and-mtls). A profile comes from `TEMPORAL_CONFIG_FILE`, and each variable overrides its field.",
    names: [
      'TEMPORAL_PROFILE',
      'TEMPORAL_CONFIG_FILE',
      'TEMPORAL_API_KEY',
      'TEMPORAL_TLS',
      'TEMPORAL_TLS_CLIENT_CERT_PATH',
      'TEMPORAL_TLS_CLIENT_KEY_PATH',
      'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
      'TEMPORAL_TLS_SERVER_NAME',
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
    ],
  },
  {
    title: 'Agents, turns and calls',
    names: [
      'AGENT_MAX_QUEUED_MESSAGES',
      'TURN_CONTEXT_MAX_BYTES',
      'AGENT_SESSION_IDLE_MS',
      'AGENT_LANE_LOOK_MS',
      'AGENT_LANE_START_GRACE_MS',
      'STEP_SUMMARY_MESSAGE_CHARS',
      'STEP_TASK_TIMEOUT_MS',
      'LOCAL_TOOL_CALLS',
      'LOCAL_MODEL_CALLS',
      'ACTIVITY_HEARTBEAT_TIMEOUT_MS',
      'TOOL_TIMEOUT_MS',
      'TOOL_MAX_ATTEMPTS',
      'ACTIVITY_MAX_INTERRUPTIONS',
      'TOOL_RETURN_IMAGE_MAX_BYTES',
      'AGENT_MESSAGE_TIMEOUT_MS',
      'AGENT_MESSAGE_LOOK_MS',
      'AGENT_MESSAGE_MAX_DEPTH',
      'AGENT_MESSAGE_MAX_STEPS',
    ],
  },
  {
    title: 'Models',
    names: [
      'OPENAI_API_KEY',
      'OPENAI_BASE_URL',
      'ANTHROPIC_API_KEY',
      'ANTHROPIC_BASE_URL',
      'LETTA_DEFAULT_EMBEDDING_HANDLE',
      'MODEL_TIMEOUT_MS',
      'MODEL_MAX_ATTEMPTS',
      'MODEL_RETRY_INITIAL_MS',
      'MODEL_TRANSCRIPT_CACHE_MESSAGES',
    ],
  },
  {
    title: 'Folders and files',
    names: [
      'FILE_MAX_BYTES',
      'FOLDER_MAX_FILES',
      'FILE_CHUNK_SIZE',
      'FILE_CHUNK_OVERLAP',
      'FILE_PARSE_TIMEOUT_MS',
      'EMBEDDING_BATCH_SIZE',
      'EMBEDDING_MAX_ATTEMPTS',
      'EMBEDDING_RETRY_INITIAL_MS',
      'FILES_MAX_OPEN',
      'FILE_VIEW_WINDOW_CHARS',
      'GREP_FILES_PAGE_SIZE',
    ],
  },
  {
    title: 'Custom tools: the local sandbox',
    names: [
      'SANDBOX_TYPE',
      'PYTHON_PATH',
      'SCHEMA_GENERATION_TIMEOUT_MS',
      'SANDBOX_BWRAP_PATH',
      'SANDBOX_CPU_SECONDS',
      'SANDBOX_MEMORY_BYTES',
      'SANDBOX_FILE_SIZE_BYTES',
      'SANDBOX_TMP_BYTES',
      'SANDBOX_OPEN_FILES',
      'SANDBOX_MAX_PROCESSES',
      'SANDBOX_WARM_POOL_SIZE',
      'SANDBOX_WARM_IDLE_MS',
      'SANDBOX_PYTHON',
      'SANDBOX_MAX_OUTPUT_BYTES',
      'SANDBOX_OUTPUT_KEEP_BYTES',
      'SANDBOX_MAX_RESULT_BYTES',
      'SANDBOX_ENV_DIR',
      'SANDBOX_PIP_PYTHON',
      'PIP_INDEX_URL',
      'PIP_FIND_LINKS',
      'PIP_NO_INDEX',
      'PIP_INSTALL_TIMEOUT_MS',
      'SANDBOX_ENV_MAX_AGE_MS',
      'SANDBOX_NODE',
      'SANDBOX_NODE_MAX_OLD_SPACE_MB',
      'NPM_REGISTRY_URL',
      'NPM_INSTALL_TIMEOUT_MS',
    ],
  },
  {
    title: 'E2B sandbox',
    names: [
      'E2B_API_KEY',
      'E2B_TEMPLATE',
      'E2B_SANDBOX_TIMEOUT_MS',
      'E2B_SANDBOX_REUSE',
      'E2B_CODE_TEMPLATE',
    ],
  },
  {
    title: 'Modal sandbox',
    names: [
      'MODAL_TOKEN_ID',
      'MODAL_TOKEN_SECRET',
      'MODAL_ENVIRONMENT',
      'MODAL_APP_NAME',
      'MODAL_PYTHON_IMAGE',
      'MODAL_NODE_IMAGE',
      'MODAL_SANDBOX_REUSE',
      'MODAL_SANDBOX_IDLE_MS',
      'MODAL_SANDBOX_LIFETIME_MS',
    ],
  },
  {
    title: 'MCP servers',
    names: [
      'MCP_CONNECT_TIMEOUT_MS',
      'MCP_LIST_TIMEOUT_MS',
      'MCP_CALL_TIMEOUT_MS',
      'MCP_TASK_POLL_MS',
      'MCP_RECONNECT_INITIAL_MS',
      'MCP_RECONNECT_MAX_MS',
      'MCP_ELICITATION_HOLD_MS',
      'MCP_INPUT_ROUNDS',
      'MCP_STDIO',
      'MCP_STDIO_READ_ONLY_PATHS',
      'MCP_STDIO_MEMORY_BYTES',
      'MCP_STDIO_MAX_PROCESSES',
      'MCP_STDIO_MAX_MESSAGE_BYTES',
      'MCP_STDIO_TMP_BYTES',
      'MCP_OAUTH_STATE_TTL_SECONDS',
      'MCP_OAUTH_REFRESH_MARGIN_SECONDS',
      'MCP_OAUTH_FETCH_TIMEOUT_MS',
      'MCP_OAUTH_MAX_RESPONSE_BYTES',
      'MCP_OAUTH_MAX_REDIRECTS',
    ],
  },
  {
    title: 'Web tools and outbound requests',
    names: [
      'FETCH_WEBPAGE_TIMEOUT_MS',
      'FETCH_WEBPAGE_MAX_BYTES',
      'FETCH_WEBPAGE_MAX_REDIRECTS',
      'OUTBOUND_ALLOW_PRIVATE',
      'EXA_API_KEY',
      'EXA_BASE_URL',
      'EXA_TIMEOUT_MS',
    ],
  },
  {
    title: 'Triggers: schedules and webhooks',
    names: [
      'SCHEDULE_CATCHUP_WINDOW_MS',
      'SCHEDULES_PER_AGENT_MAX',
      'WEBHOOK_SECRET',
      'APPROVAL_WEBHOOK_URL',
      'APPROVAL_LINK_TTL_SECONDS',
      'WEBHOOK_TIMEOUT_MS',
      'WEBHOOK_MAX_ATTEMPTS',
      'WEBHOOK_RETRY_INITIAL_MS',
      'WEBHOOK_RETRY_MAX_MS',
    ],
  },
];

/** docs/configuration.md, from the repository's root (scripts run from dist/scripts, the test from test/). */
export const DOC_PATH = 'docs/configuration.md';

/** A default as the page shows it: `shownDefaults` where the schema's is no value to print. */
function defaultText(name: Name, value: unknown): string {
  const shown = shownDefaults[name];
  if (shown !== undefined) return shown;
  if (value === undefined) return 'unset';
  if (value === '' || (Array.isArray(value) && value.length === 0)) return 'empty';
  return `\`${String(value)}\``;
}

/** A markdown table padded as prettier pads it (every cell here is of single-width characters). */
function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((cell, i) => Math.max(3, cell.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i])).join(' | ')} |`;
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)];
}

export function configurationMarkdown(): string {
  const shape = ConfigSchema.shape;
  const names = Object.keys(shape) as Name[];
  const grouped = GROUPS.flatMap((group) => group.names);
  const missing = names.filter((name) => !grouped.includes(name));
  const unknown = grouped.filter((name) => !names.includes(name));
  const twice = grouped.filter((name, i) => grouped.indexOf(name) !== i);
  if (missing.length || unknown.length || twice.length)
    throw new Error(
      `scripts/config-doc.ts GROUPS: missing ${missing.join(', ') || 'none'}; not in the schema ${
        unknown.join(', ') || 'none'
      }; listed twice ${twice.join(', ') || 'none'}`,
    );
  const undescribed = names.filter((name) => !shape[name].description);
  if (undescribed.length) throw new Error(`src/config.ts: no .describe() on ${undescribed.join(', ')}`);
  const defaults = ConfigSchema.parse({}) as Record<string, unknown>;
  const lines = [
    '# Configuration',
    '',
    '<!-- Generated by `npm run docs:config` (scripts/config-doc.ts) from src/config.ts: edit the descriptions there. -->',
    '',
    'All settings come from the environment and are checked at start-up: a bad value stops the process',
    'with one line naming the variable (e.g. `Invalid configuration: PORT="abc": expected a port number`).',
    'Empty values count as unset.',
  ];
  for (const group of GROUPS) {
    lines.push('', `## ${group.title}`, '');
    if (group.intro) lines.push(group.intro, '');
    lines.push(
      ...table(
        ['variable', 'default', 'meaning'],
        group.names.map((name) => [
          `\`${name}\``,
          defaultText(name, defaults[name]),
          shape[name].description!.replace(/\|/g, '\\|'),
        ]),
      ),
    );
  }
  return `${lines.join('\n')}\n`;
}

if (require.main === module) {
  const root = path.resolve(__dirname, '..', '..');
  fs.writeFileSync(path.join(root, DOC_PATH), configurationMarkdown());
  console.log(`wrote ${DOC_PATH}`);
}
