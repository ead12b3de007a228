/** MCP servers' settings: connecting, listing and calling, stdio servers' sandbox, and OAuth. */
import { z } from 'zod';
import { flag, milliseconds, optional, pathList, wholeNumber } from '../settings-fields';

export const mcpSettings = z
  .object({
    MCP_SHOW_CREDENTIALS: flag
      .default(false)
      .describe(
        "`true`: the API returns an MCP server's env values, headers and tokens in full, as Letta does; by default they are masked (`****` and at most their last four characters), so that reading the server list does not give away every server's credentials",
      ),
    MCP_CONNECT_TIMEOUT_MS: milliseconds
      .default(30_000)
      .describe('longest connecting to an MCP server may take (listing the tools of one past it: 408)'),
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
    MCP_INPUT_ROUNDS: wholeNumber
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
    MCP_STDIO_MEMORY_BYTES: wholeNumber
      .positive()
      .default(1024 * 1024 * 1024)
      .describe(
        "memory of one stdio MCP server: its memory cgroup's limit where cgroups are writable, else RLIMIT_DATA of each of its processes",
      ),
    MCP_STDIO_MAX_PROCESSES: wholeNumber
      .positive()
      .default(256)
      .describe(
        "processes (threads too) of one stdio MCP server: its pids cgroup's limit, else RLIMIT_NPROC of their uid, shared by all stdio servers",
      ),
    MCP_STDIO_MAX_MESSAGE_BYTES: wholeNumber
      .positive()
      .default(64 * 1024 * 1024)
      .describe(
        "the longest message a stdio MCP server may send (a tool's whole result is one; it is cut at the tool's `return_char_limit` after)",
      ),
    MCP_STDIO_TMP_BYTES: wholeNumber
      .positive()
      .default(256 * 1024 * 1024)
      .describe(
        'size of each private tmpfs of a stdio MCP server: `/tmp`, and `/work`, its HOME and working folder',
      ),
    MCP_OAUTH_STATE_TTL_SECONDS: wholeNumber
      .positive()
      .default(600)
      .describe(
        "how long an OAuth-protected MCP server's authorization URL stays good: its callback after that is refused",
      ),
    MCP_OAUTH_REFRESH_MARGIN_SECONDS: wholeNumber
      .min(0)
      .default(60)
      .describe("an MCP server's OAuth access token that expires within this is renewed before it is sent"),
    MCP_OAUTH_FETCH_TIMEOUT_MS: milliseconds
      .default(10_000)
      .describe(
        'longest one OAuth request (metadata, client registration, token) for an MCP server may take',
      ),
    MCP_OAUTH_MAX_RESPONSE_BYTES: wholeNumber
      .positive()
      .default(1024 * 1024)
      .describe('largest answer to an OAuth request for an MCP server that is read'),
    MCP_OAUTH_MAX_REDIRECTS: wholeNumber
      .min(0)
      .default(5)
      .describe(
        'redirects one OAuth request for an MCP server follows, each judged by `OUTBOUND_ALLOW_PRIVATE`',
      ),
  })
  .meta({
    title: 'MCP servers',
    description:
      'How long connecting to an MCP server and calling its tools may take, where stdio servers run and with what limits, and the OAuth of protected servers.',
  });

export type McpSettings = z.infer<typeof mcpSettings>;
