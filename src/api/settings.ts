/** The HTTP API's settings: where it listens, who may call it, and the limits of a request. */
import { z } from 'zod';
import type { TurnSettings } from '../agent/settings';
import type { McpSettings } from '../mcp/settings';
import type { TemporalSettings } from '../temporal/settings';
import type { ToolsSettings } from '../tools/settings';
import { list, milliseconds, optional, port, url, wholeNumber } from '../settings-fields';

/** Origins as browsers send them (`https://app.example.com`, no path): a trailing slash is dropped. */
const originList = list.transform((items, ctx) =>
  items.map((item) => {
    const origin = URL.canParse(item) ? new URL(item).origin : 'null';
    if (origin === 'null')
      ctx.addIssue({ code: 'custom', message: `expected origins like https://app.example.com, not ${item}` });
    return origin;
  }),
);

export const apiSettings = z
  .object({
    PORT: port.default(8283).describe('REST API port'),
    HOST: z
      .string()
      .min(1)
      .default('127.0.0.1')
      .describe('REST API bind address (`0.0.0.0` to listen on every interface)'),
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
    LETTA_SERVER_PASSWORD: optional(z.string()).describe(
      'password every route but `GET /v1/health/` asks for (`Authorization: Bearer …` or `X-BARE-PASSWORD: password …`); unset: loopback needs none, and a bind beyond loopback gets one made at start-up (see [Security](security.md))',
    ),
    ALLOWED_HOSTS: list.describe(
      'comma-separated host names clients use besides loopback ones and `HOST` itself (`.example.com`: a domain and its subdomains; `*`: any); another `Host` gets 403',
    ),
    CORS_ORIGINS: originList.describe(
      'comma-separated origins of web apps (e.g. `https://app.letta.com`) that browsers may call the API from; any other `Origin` gets 403',
    ),
    AUTH_FAILURE_LIMIT: wholeNumber
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
    ACCESS_TOKEN_MAX_AGENTS: wholeNumber
      .positive()
      .default(100)
      .describe(
        "how many agents one scoped access token may name in its policy (a sandboxed call's token too: its own, those it created, those sharing its tags)",
      ),
    MAX_REQUEST_BODY_BYTES: wholeNumber
      .positive()
      .default(10 * 1024 * 1024)
      .describe('largest accepted request body (larger: 413)'),
    MAX_JSON_DEPTH: wholeNumber
      .positive()
      .default(64)
      .describe("deepest nesting of a request's JSON (deeper: 422)"),
    AGENT_FILE_MAX_BYTES: wholeNumber
      .positive()
      .default(50 * 1024 * 1024)
      .describe('largest agent file `POST /v1/agents/import` takes (larger: 413)'),
    HEALTH_CHECK_TIMEOUT_MS: milliseconds
      .default(3_000)
      .describe('how long `/v1/health/` waits for the database and Temporal'),
    HTTP_KEEP_ALIVE_TIMEOUT_MS: milliseconds
      .default(65_000)
      .describe(
        "how long the API keeps an idle keep-alive connection open; longer than clients' and load balancers' own idle timeouts, so that they close it first and never send a request on a connection the server is closing",
      ),
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
    AG_UI_SNAPSHOT_MESSAGES: wholeNumber
      .min(1)
      .max(10_000)
      .default(500)
      .describe(
        "how many of a thread's latest messages an AG-UI frontend gets in MESSAGES_SNAPSHOT when it joins the thread (a run with no new message, or a run id sent again)",
      ),
  })
  .meta({
    title: 'HTTP API',
    description:
      'Where the REST API listens, who may call it (passwords, hosts, origins, scoped tokens), and the limits of a request and of a stream.',
  });

export type ApiSettings = z.infer<typeof apiSettings>;

/**
 * What the API's handlers read: its own settings, the agent layer's, and those of the areas its routes
 * serve (tools' schemas, MCP servers, links to the Temporal UI).
 */
export type ApiContextSettings = ApiSettings & TurnSettings & ToolsSettings & McpSettings & TemporalSettings;
