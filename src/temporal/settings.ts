/** Temporal's settings: the server (embedded or a cluster), the connection to it, and this process's workers. */
import { z } from 'zod';
import { list, milliseconds, optional, port, url, wholeNumber } from '../settings-fields';
import type { TemporalTarget } from './env-config';

/** A boolean as Temporal's envconfig reads it (`true`/`1` or `false`/`0`). */
const temporalFlag = z
  .enum(['true', 'false', '1', '0'], { error: 'expected true or false' })
  .transform((value) => value === 'true' || value === '1');

/** host:port of a gRPC endpoint, as Temporal clients take it. */
const hostPort = z.string().regex(/^[^\s:/]+:\d{1,5}$/, 'expected host:port, e.g. temporal:7233');

export const temporalServerSettings = z.object({
  TEMPORAL_ADDRESS: optional(hostPort).meta({
    description:
      '`host:port` of a Temporal frontend; unset starts the embedded dev server; TLS, API keys and profiles: [Temporal Cloud and mTLS](operations.md#temporal-cloud-and-mtls)',
    shownDefault: 'unset: embedded',
  }),
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
  TASK_QUEUE_PREFIX: z
    .string()
    .default('')
    .describe(
      'prefix for the task queues (`<deployment>.agent`, `<deployment>.tools-sandbox`, `<deployment>.tools-mcp`); the deployment id already keeps deployments on one namespace apart (see [One conversation, one turn at a time](design.md#one-conversation-one-turn-at-a-time))',
    ),
  TOOL_WORKER_POOLS: list
    .pipe(z.array(z.enum(['sandbox', 'mcp'], { error: 'expected a list of sandbox, mcp' })))
    .meta({
      description:
        "the tool modes whose calls go to a task queue of their own (`sandbox`: custom tools and `run_code` on `<deployment>.tools-sandbox`; `mcp`: MCP calls on `<deployment>.tools-mcp`), served by `--role=tools` processes; the others run on the turn's own queue, where the worker that runs the turn takes them at once (Temporal's eager activity dispatch): see [Tool worker pools](operations.md#tool-worker-pools)",
      shownDefault: "empty: every call on the turn's queue",
    }),
  WORKER_MAX_CACHED_WORKFLOWS: wholeNumber
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
  ).meta({
    description:
      "the build id of this release's worker deployment version; unset: package.json's version, plus `+<git commit>` when run from a git work tree (set it in images, which have no `.git`): see [Upgrades](upgrades.md#worker-versioning)",
    shownDefault: 'unset: the release',
  }),
  WORKER_VERSIONING: z.enum(['replay', 'manual'], { error: 'expected replay or manual' }).optional().meta({
    description:
      'who replaces the current worker deployment version with a new build: `replay`, the build itself at start-up, once it replays the open histories of every long-lived workflow type; `manual`, an operator (`npm run upgrade:replay`, then the `temporal worker deployment set-current-version` the start-up log prints). Either way a first version becomes current by itself, and a build older than the current one never does: see [Upgrades](upgrades.md#worker-versioning)',
    shownDefault: 'unset: by role',
  }),
  WORKER_REPLAY_OPEN_MAX: wholeNumber
    .min(1)
    .default(500)
    .describe(
      'open (running and paused) executions of each long-lived workflow type a build replays before it becomes current: all of them up to this many, else the oldest this many (`npm run upgrade:replay` too)',
    ),
  WORKER_REPLAY_CLOSED: wholeNumber
    .min(0)
    .default(10)
    .describe('the most recently closed executions of each long-lived workflow type it replays besides'),
});

/** Connecting to a secured cluster, as the `temporal` CLI does (src/temporal/env-config.ts). */
export const temporalConnectionSettings = z
  .object({
    TEMPORAL_PROFILE: optional(z.string()).meta({
      description: 'profile of the config file to use; one that does not exist stops start-up',
      shownDefault: 'unset: `default`',
    }),
    TEMPORAL_CONFIG_FILE: optional(z.string()).meta({
      description:
        'a `temporal.toml` with `[profile.<name>]` tables, as the CLI writes them (`temporal config set --profile … --prop …`)',
      shownDefault: 'unset: `~/.config/temporalio/temporal.toml`',
    }),
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
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: optional(z.string()).meta({
      description: "CA certificate (PEM) that signed the server's certificate",
      shownDefault: 'unset: system CAs',
    }),
    TEMPORAL_TLS_SERVER_NAME: optional(z.string()).meta({
      description:
        "name to verify the server's certificate against (and send as SNI), when it is not the host of the address",
      shownDefault: 'unset: the host',
    }),
    TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: optional(temporalFlag).describe(
      "not supported by Temporal's TypeScript SDK: `true` stops start-up; set `TEMPORAL_TLS_SERVER_NAME` instead",
    ),
  })
  .meta({
    title: 'Temporal connection: TLS, API keys, profiles',
    description:
      "Temporal's own environment configuration, as the `temporal` CLI reads it; see [Temporal Cloud and mTLS](operations.md#temporal-cloud-and-mtls). A profile comes from `TEMPORAL_CONFIG_FILE`, and each variable overrides its field.",
  });

export const temporalSettings = temporalServerSettings.extend(temporalConnectionSettings.shape).meta({
  title: 'Temporal',
  description:
    'The Temporal server (the embedded dev server, or a cluster at `TEMPORAL_ADDRESS`), its task queues, and the workers and their versions.',
});

export type TemporalSettings = z.infer<typeof temporalSettings> & {
  /**
   * The external Temporal and how to connect to it (TLS, API key), from the environment and a
   * temporal.toml profile; unset for the embedded dev server. TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE
   * then hold the effective address and namespace, wherever they came from.
   */
  temporal?: TemporalTarget;
};
