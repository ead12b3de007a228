/** The agent layer's settings: turns and their calls, agents' messages to each other, folders, triggers. */
import { z } from 'zod';
import type { LlmSettings } from '../llm/settings';
import type { PublicAddress } from '../net/hosts';
import type { NetSettings } from '../net/settings';
import { flag, milliseconds, optional, wholeNumber } from '../settings-fields';
import type { ToolQueueName } from '../../contracts/tool-modes';

export const turnSettings = z
  .object({
    AGENT_MAX_QUEUED_MESSAGES: wholeNumber
      .positive()
      .default(100)
      .describe('messages one agent holds queued behind the turn it runs; one more is a 409'),
    TURN_CONTEXT_MAX_BYTES: wholeNumber
      .min(1024)
      .max(1024 * 1024)
      .default(256 * 1024)
      .describe(
        "largest an agent's tools and tool rules may be as a turn carries them (JSON bytes): a message or an answer to an agent past it is a 400 that says so, rather than a turn Temporal fails (it refuses a payload past 2 MB; see [Temporal's limits](operations.md#temporals-limits))",
      ),
    REQUEST_CONTEXT_MAX_BYTES: wholeNumber
      .min(0)
      .max(1024 * 1024)
      .default(64 * 1024)
      .describe(
        "largest the context entries of one request may be together (their descriptions' and values' UTF-8 bytes; an AG-UI run's `context`), which every model call of its run shows in the system message: a request past it is a 400 that says so, and nothing of it is stored",
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
    STEP_SUMMARY_MESSAGE_CHARS: wholeNumber
      .min(0)
      .max(500)
      .default(80)
      .describe(
        "how much of a turn's message its summary in the Temporal UI shows (`support-bot: Where is my order?`), the only text of a message a history holds; `0`: the agent's name alone",
      ),
    STEP_TASK_TIMEOUT_MS: optional(milliseconds.min(1_000)).meta({
      description:
        "workflow task timeout of an agent turn (at least 1000); with the local switches above, a local call holds the turn's task, which the worker renews at 80% of this",
      shownDefault: "unset: Temporal's 10 s",
    }),
    TURN_HISTORY_MAX_EVENTS: wholeNumber
      .min(100)
      .max(50_000)
      .default(1_000)
      .describe(
        "a turn's run continues as new once its Temporal history holds this many events (or sooner, when Temporal suggests it: 4,096 events or 4 MiB), so that a long turn's thousandth step costs what its first did (a workflow task costs more as its run's history grows)",
      ),
    LOCAL_TOOL_CALLS: flag
      .default(false)
      .describe(
        '`true`: sandboxed, `run_code` and MCP tool calls run as local activities of the agent worker instead of regular activities: faster per call, but hidden from Pending Activities and holding the turn\'s workflow task ("Where calls run")',
      ),
    LOCAL_MODEL_CALLS: flag
      .default(false)
      .describe(
        '`true`: model calls run as local activities of the agent worker instead of regular activities that heartbeat ("Where calls run")',
      ),
    ACTIVITY_HEARTBEAT_TIMEOUT_MS: milliseconds
      .default(20_000)
      .describe(
        'a model or tool call whose worker stops heartbeating this long is retried on another worker; also a tool call\'s claim lease ("One call, one runner at a time")',
      ),
    TOOL_TIMEOUT_MS: milliseconds.default(180_000).describe('longest one tool call may take'),
    TOOL_MAX_ATTEMPTS: wholeNumber
      .min(1)
      .default(3)
      .describe("attempts of a tool activity whose infrastructure failed (a tool's own error is a result)"),
    ACTIVITY_MAX_INTERRUPTIONS: wholeNumber
      .min(0)
      .default(10)
      .describe(
        "how many times in a row a model or tool call whose last attempt was cut short by its process stopping (a deploy past `SHUTDOWN_GRACE_MS`, a crash: not the call's failure) is run again, beyond `MODEL_MAX_ATTEMPTS` and `TOOL_MAX_ATTEMPTS`",
      ),
    AGENT_MESSAGE_TIMEOUT_MS: milliseconds
      .default(600_000)
      .describe('how long a message to another agent waits for its reply'),
    AGENT_MESSAGE_LOOK_MS: milliseconds
      .min(100)
      .default(30_000)
      .describe(
        "how often a message to another agent that waits for its reply looks whether the recipient's turn still runs (a turn signals the waiting call when its run stops; this finds one terminated in the Temporal UI)",
      ),
    AGENT_MESSAGE_MAX_DEPTH: wholeNumber
      .min(1)
      .default(5)
      .describe('the most agents a chain of agent-to-agent messages passes through'),
    AGENT_MESSAGE_MAX_STEPS: wholeNumber
      .min(1)
      .default(50)
      .describe('`max_steps` of the turn a message from another agent starts'),
  })
  .meta({
    title: 'Agents, turns and calls',
    description:
      "How a conversation's turns queue and run, how long and how often their model and tool calls may run, and agents' messages to each other.",
  });

/** Folders and their files' ingestion (workflows/file-ingestion.ts). */
export const folderSettings = z
  .object({
    FILE_MAX_BYTES: wholeNumber
      .positive()
      .default(50 * 1024 * 1024)
      .describe('largest file a folder upload takes (larger: 413, nothing stored)'),
    FOLDER_MAX_FILES: wholeNumber
      .positive()
      .default(1000)
      .describe('files one folder holds at most; one more upload is a 409'),
    FILE_CHUNK_SIZE: wholeNumber
      .min(16)
      .default(300)
      .describe(
        "tokens per chunk of an ingested file (about 4 characters each; Letta's `embedding_chunk_size`), unless the folder was created with its own",
      ),
    FILE_CHUNK_OVERLAP: wholeNumber
      .min(0)
      .default(50)
      .describe('tokens a chunk repeats of the one before it'),
    FILE_PARSE_TIMEOUT_MS: milliseconds
      .default(600_000)
      .describe('longest the parsing of one upload (PDF text extraction included) may take'),
    EMBEDDING_BATCH_SIZE: wholeNumber
      .min(1)
      .max(2048)
      .default(32)
      .describe('chunks per embedding request during ingestion: one activity each'),
    EMBEDDING_MAX_ATTEMPTS: wholeNumber
      .min(1)
      .default(10)
      .describe(
        'attempts of one embedding batch on rate limits (429), 5xx and dropped connections (backoff ×2, at most 60 s apart); then the file is `error`',
      ),
    EMBEDDING_RETRY_INITIAL_MS: milliseconds
      .default(1_000)
      .describe('first backoff interval of those retries'),
    FILES_MAX_OPEN: optional(wholeNumber.min(1).max(1000)).describe(
      "files of its folders an agent keeps open at once unless it sets `max_files_open` (unset: Letta's default for its context window: 3 up to 8k tokens, 5 to 32k, 10 to 200k, 15 beyond); one more opened closes the least recently used",
    ),
    FILE_VIEW_WINDOW_CHARS: optional(wholeNumber.positive().max(2147483647)).describe(
      "characters of each open file shown in an agent's context unless it sets `per_file_view_window_char_limit` (unset: Letta's default for its context window: 5,000 up to 8k tokens, 15,000 to 32k, 25,000 to 128k, 40,000 beyond)",
    ),
  })
  .meta({
    title: 'Folders and files',
    description:
      "What a folder takes, how its files are chunked and embedded, and how much of them an agent's context shows.",
  });

export const triggerSettings = z
  .object({
    SCHEDULE_CATCHUP_WINDOW_MS: z.coerce
      .number({ error: 'expected milliseconds' })
      .int()
      .min(10_000, { error: 'expected at least 10000 (Temporal’s least catch-up window)' })
      .default(60_000)
      .describe(
        'a recurring scheduled message whose firing was missed (everything down at the time) still fires this late; older missed firings are skipped (one-time messages always fire once, however late); at least 10000',
      ),
    SCHEDULES_PER_AGENT_MAX: wholeNumber
      .min(1)
      .default(100)
      .describe('scheduled messages one agent may have (more: 409)'),
    WEBHOOK_SECRET: optional(z.string().min(16)).meta({
      description:
        'the key that signs every webhook (`X-Letta-Signature`, see [Triggers](operations.md#triggers)); at least 16 characters; unset, one is made on first use and kept in the database',
      shownDefault: 'unset: made once per deployment',
    }),
    APPROVAL_WEBHOOK_URL: optional(z.string().url()).describe(
      'where approval notices go for agents without their own `metadata.approval_webhook_url` (see [Triggers](operations.md#triggers)); it passes the address checks of `OUTBOUND_ALLOW_PRIVATE` as every webhook does',
    ),
    APPROVAL_LINK_TTL_SECONDS: wholeNumber
      .min(0)
      .default(7 * 24 * 3600)
      .describe(
        "how long the signed approve / deny links of an approval notice work (never beyond the pause's own expiry); 0: notices carry no links",
      ),
    WEBHOOK_TIMEOUT_MS: milliseconds
      .default(5_000)
      .describe("one delivery attempt of a webhook (as Letta's callbacks)"),
    WEBHOOK_MAX_ATTEMPTS: wholeNumber
      .min(1)
      .default(10)
      .describe('attempts at a webhook before its delivery workflow gives up (the run keeps the last error)'),
    WEBHOOK_RETRY_INITIAL_MS: milliseconds
      .default(1_000)
      .describe("wait before a webhook's second attempt; doubled each time"),
    WEBHOOK_RETRY_MAX_MS: milliseconds
      .default(60_000)
      .describe('longest wait between two attempts at a webhook'),
  })
  .meta({
    title: 'Triggers: schedules and webhooks',
    description:
      'Scheduled messages, and the webhooks that tell of a run or an approval, with their retries.',
  });

export const agentSettings = turnSettings.extend(folderSettings.shape).extend(triggerSettings.shape);

export type AgentSettings = z.infer<typeof agentSettings>;

/**
 * What starting, answering and scheduling turns reads: the agent layer's own settings, the models', the
 * outbound allow-list, the API's address (links in webhooks), and the MCP timeouts a turn's calls carry.
 */
export type TurnSettings = AgentSettings &
  LlmSettings &
  NetSettings &
  PublicAddress & {
    MCP_CALL_TIMEOUT_MS: number;
    MCP_CONNECT_TIMEOUT_MS: number;
    TOOL_WORKER_POOLS: readonly ToolQueueName[];
  };
