/** The sandboxes' settings: where custom tools run (bubblewrap, E2B, Modal), their limits and environments. */
import fs from 'node:fs';
import { z } from 'zod';
import { flag, milliseconds, optional, url, wholeNumber } from '../settings-fields';
import type { ProcessSettings } from '../process-settings';
import { modalUnsupportedReason } from './modal-support';

/**
 * The node TypeScript tools run on: the server's own when the sandbox can see it (it shows only /usr),
 * else the system's (a server run from nvm or scripts/install-node.sh's cache).
 */
function sandboxNode(): string {
  if (process.execPath.startsWith('/usr/')) return process.execPath;
  return ['/usr/bin/node', '/usr/local/bin/node'].find((node) => fs.existsSync(node)) ?? process.execPath;
}

export const localSandboxSettings = z
  .object({
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
    SANDBOX_CPU_SECONDS: wholeNumber
      .positive()
      .default(180)
      .describe('CPU seconds a tool process may use (RLIMIT_CPU)'),
    SANDBOX_MEMORY_BYTES: wholeNumber
      .positive()
      .default(1024 * 1024 * 1024)
      .describe(
        'address space of a Python tool (RLIMIT_AS), and the memory cgroup limit where cgroups are writable',
      ),
    SANDBOX_FILE_SIZE_BYTES: wholeNumber
      .positive()
      .default(64 * 1024 * 1024)
      .describe('largest file a tool may write (RLIMIT_FSIZE)'),
    SANDBOX_TMP_BYTES: wholeNumber
      .positive()
      .default(64 * 1024 * 1024)
      .describe(
        "size of each of the sandbox's private tmpfs mounts, `/tmp`, `/dev/shm` and the work folder `/work` (fresh per call)",
      ),
    SANDBOX_OPEN_FILES: wholeNumber
      .positive()
      .default(256)
      .describe('open files per tool process (RLIMIT_NOFILE)'),
    SANDBOX_MAX_PROCESSES: wholeNumber
      .positive()
      .default(128)
      .describe('processes: RLIMIT_NPROC of the sandbox uid, and the pids cgroup limit where writable'),
    SANDBOX_WARM_POOL_SIZE: wholeNumber
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
    SANDBOX_MAX_OUTPUT_BYTES: wholeNumber
      .positive()
      .default(1024 * 1024)
      .describe(
        'a tool that prints more than this (stdout and stderr together) is stopped with an `OutputLimitError`',
      ),
    SANDBOX_OUTPUT_KEEP_BYTES: wholeNumber
      .positive()
      .default(64 * 1024)
      .describe(
        "most of each of a tool's stdout and stderr sent back: its first and last halves, the middle replaced by `[... N bytes cut ...]`",
      ),
    SANDBOX_MAX_RESULT_BYTES: wholeNumber
      .positive()
      .default(16 * 1024 * 1024)
      .describe(
        'largest result a tool may send back (its return, already cut at `return_char_limit` inside the sandbox, and its memory edits); past it the tool is stopped',
      ),
    SANDBOX_ENV_DIR: optional(z.string()).meta({
      description:
        "where the venvs and npm sets of tools with requirements live, one per set of requirements, built once and shared (default `<DATA_DIR>/sandbox-envs`; when the server runs as root and the sandbox's user, nobody, cannot enter `DATA_DIR`, a folder of its own under `/var/cache/letta-temporal`); every folder on the way must be enterable by others, which `--check` checks",
      shownDefault: 'in `DATA_DIR`',
    }),
    SANDBOX_PIP_PYTHON: optional(z.string()).meta({
      description:
        "the Python whose pip (≥ 22.3) installs tools' requirements into their venvs; unset: `/usr/bin/python3` or else `python3`, whichever has one",
      shownDefault: 'unset: probed',
    }),
    PIP_INDEX_URL: optional(url).meta({
      description:
        "package index for tools' requirements (`https://…`, or `file://` for a PEP 503 folder); pip's own config and `PIP_*` variables are ignored",
      shownDefault: 'unset: PyPI',
    }),
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
    SANDBOX_NODE: z.string().min(1).default(sandboxNode()).meta({
      description:
        "the node TypeScript tools run on in the sandbox (under `/usr`, as `/usr/bin/node` and the Docker image's are; a server's node elsewhere, nvm's say, gives way to `/usr/bin/node` or `/usr/local/bin/node` when there is one)",
      shownDefault: "server's `node`",
    }),
    SANDBOX_NODE_MAX_OLD_SPACE_MB: wholeNumber
      .positive()
      .default(512)
      .describe('V8 heap limit of a TypeScript tool (`--max-old-space-size`)'),
    NPM_REGISTRY_URL: optional(url).meta({
      description: "the registry TypeScript tools' `npm_requirements` are installed from",
      shownDefault: "npm's own",
    }),
    NPM_INSTALL_TIMEOUT_MS: milliseconds
      .default(300_000)
      .describe('longest the install of one set of `npm_requirements` may take'),
  })
  .meta({
    title: 'Custom tools: the local sandbox',
    description:
      'Which sandbox runs custom tools, and the local one (bubblewrap; no isolation with `local-unsafe`): the limits of a tool process, its warm runners, and where its requirements come from.',
  });

export const e2bSettings = z
  .object({
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
    E2B_CODE_TEMPLATE: optional(z.string().min(1)).meta({
      description:
        "E2B template `run_code` starts from when `E2B_API_KEY` is set (E2B's code interpreter by default)",
      shownDefault: "the SDK's",
    }),
  })
  .meta({
    title: 'E2B sandbox',
    description: 'Tools in E2B sandboxes (`SANDBOX_TYPE=e2b`), and `run_code` wherever `E2B_API_KEY` is set.',
  });

export const modalSettings = z
  .object({
    MODAL_TOKEN_ID: optional(z.string()).describe(
      'Modal token id; with `MODAL_TOKEN_SECRET` it turns Modal on for tools that ask for it (`metadata_.sandbox = "modal"`); required with `SANDBOX_TYPE=modal`',
    ),
    MODAL_TOKEN_SECRET: optional(z.string()).describe('Modal token secret'),
    MODAL_ENVIRONMENT: optional(z.string().min(1)).meta({
      description: 'Modal environment the sandboxes run in',
      shownDefault: "Modal's default",
    }),
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
  })
  .meta({
    title: 'Modal sandbox',
    description:
      'Tools in Modal sandboxes: every custom tool with `SANDBOX_TYPE=modal`, else those that ask for it.',
  });

export const sandboxSettings = localSandboxSettings
  .extend(e2bSettings.shape)
  .extend(modalSettings.shape)
  .meta({
    title: 'Sandboxes',
    description:
      'Where custom tools and `run_code` run, the limits of a sandboxed call, and where their requirements come from.',
  });

/** The sandboxes' settings, and the data folder their environments live in by default. */
export type SandboxSettings = z.infer<typeof sandboxSettings> & Pick<ProcessSettings, 'dataDir'>;

/** Why the chosen sandbox cannot run with these settings, or nothing when it can. */
export function sandboxProblem(settings: z.infer<typeof sandboxSettings>): string | undefined {
  // E2B runs only when chosen, and then it needs its key (the key alone never selects it).
  if (settings.SANDBOX_TYPE === 'e2b' && !settings.E2B_API_KEY)
    return 'E2B_API_KEY="": required with SANDBOX_TYPE=e2b';
  if (settings.SANDBOX_TYPE !== 'modal') return undefined;
  if (!settings.MODAL_TOKEN_ID || !settings.MODAL_TOKEN_SECRET)
    return 'MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are required with SANDBOX_TYPE=modal';
  const unsupported = modalUnsupportedReason();
  return unsupported ? `SANDBOX_TYPE=modal: ${unsupported}` : undefined;
}
