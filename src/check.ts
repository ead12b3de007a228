/**
 * `npm start -- --check`: whether this machine has what the server needs, each item with the line that
 * fixes it. It runs the real things (a sandboxed call starts, the database answers, each model endpoint
 * answers with its key) and starts nothing that stays.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { ModalClient } from 'modal';
import OpenAI from 'openai';
import type { Config } from './config';
import { connectPostgres } from './db/database';
import { sandboxFor } from './sandbox';
import { environmentsReport } from './sandbox/install-process';
import { modalUnsupportedReason } from './sandbox/modal-support';
import { sandboxFix } from './banner';
import { errorText } from './temporal/connection';
import { reachableHost } from './net/hosts';
import { findTemporalBinary, goAvailable, TEMPORAL_CLI_VERSION } from './temporal/cli-binary';

export interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
  /** What to do about it, when not ok. */
  fix?: string;
  /** Neither passed nor a problem: a fact to know (a port this server, already running, holds). */
  note?: true;
}

type Check = (config: Config) => Promise<CheckResult | CheckResult[]>;

const passed = (name: string, detail: string): CheckResult => ({ name, ok: true, detail });
const failed = (name: string, detail: string, fix: string): CheckResult => ({ name, ok: false, detail, fix });
const noted = (name: string, detail: string): CheckResult => ({ name, ok: true, detail, note: true });

/** A promise that gives up after `ms`, with `what` in its error. */
function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

const MIN_NODE = 20;

const node: Check = async () => {
  const major = Number(process.versions.node.split('.')[0]);
  return major >= MIN_NODE
    ? passed('Node.js', process.version)
    : failed(
        'Node.js',
        `${process.version} is too old`,
        `install Node.js ${MIN_NODE} or newer (22 or 24 LTS)`,
      );
};

const python: Check = async (config) => {
  const run = spawnSync(config.PYTHON_PATH, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  return run.status === 0
    ? passed('python3', `${(run.stdout || run.stderr).trim()} (${config.PYTHON_PATH})`)
    : failed(
        'python3',
        `${config.PYTHON_PATH} does not run${run.error ? `: ${run.error.message}` : ''}`,
        'install python3 (sudo apt-get install python3), or set PYTHON_PATH',
      );
};

/** A sandbox started as a tool call would start it (bubblewrap and python3 included). */
const sandbox: Check = async (config) => {
  const configured = sandboxFor(config);
  try {
    const problem = await configured.problem();
    return problem
      ? failed('sandbox', `${configured.describe()}: ${problem}`, sandboxFix(problem))
      : passed('sandbox', configured.describe());
  } finally {
    configured.close();
  }
};

/** Where tools' pip and npm environments live, and whether the sandbox's user can reach them there. */
const toolEnvironments: Check = async (config) => {
  const name = 'tool environments';
  if (config.SANDBOX_TYPE === 'e2b') return passed(name, 'built in E2B');
  const { detail, problem, fix } = environmentsReport(config);
  return problem ? failed(name, problem, fix!) : passed(name, detail);
};

const temporal: Check = async (config) => {
  if (config.TEMPORAL_ADDRESS) return passed('Temporal', `TEMPORAL_ADDRESS ${config.TEMPORAL_ADDRESS}`);
  const binary = findTemporalBinary(config.TEMPORAL_CLI_PATH);
  if (binary) return passed('Temporal CLI', `${binary.path} (${binary.source})`);
  if (await releasesReachable())
    return passed('Temporal CLI', 'not installed yet: the first start downloads it (once)');
  return goAvailable()
    ? passed(
        'Temporal CLI',
        'not installed yet, no download here: the first start builds it with Go (minutes, once)',
      )
    : failed(
        'Temporal CLI',
        'no temporal binary, downloads blocked, and no Go to build one',
        'put `temporal` on PATH (https://docs.temporal.io/cli), set TEMPORAL_CLI_PATH, or install Go >= 1.25',
      );
};

/** Whether scripts/install-temporal.sh could download the CLI (its TEMPORAL_CLI_DOWNLOAD_URL). */
async function releasesReachable(): Promise<boolean> {
  const releases =
    process.env.TEMPORAL_CLI_DOWNLOAD_URL ?? 'https://github.com/temporalio/cli/releases/download';
  try {
    const res = await fetch(`${releases}/v${TEMPORAL_CLI_VERSION}/checksums.txt`, {
      method: 'HEAD',
      signal: AbortSignal.timeout(5_000),
    });
    return res.ok;
  } catch {
    return false;
  }
}

const database: Check = async (config) => {
  if (!config.DATABASE_URL) {
    try {
      fs.mkdirSync(config.dataDir, { recursive: true });
      fs.accessSync(config.dataDir, fs.constants.W_OK);
      return passed('database', `embedded PostgreSQL (PGlite) in ${config.dataDir}`);
    } catch (error) {
      return failed(
        'database',
        errorText(error),
        `make DATA_DIR (${config.dataDir}) writable, or set DATA_DIR`,
      );
    }
  }
  const db = connectPostgres(config.DATABASE_URL, 1);
  try {
    await within(5_000, 'PostgreSQL', db.query('SELECT 1'));
    return passed('database', 'PostgreSQL at DATABASE_URL answers');
  } catch (error) {
    return failed('database', errorText(error), 'start PostgreSQL, or correct DATABASE_URL');
  } finally {
    await db.close();
  }
};

function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/** The version of this server when one answers its health check at `host:port` (open without the password). */
async function runningServerVersion(host: string, port: number): Promise<string | undefined> {
  try {
    const response = await fetch(`http://${reachableHost(host)}:${port}/v1/health/`, {
      signal: AbortSignal.timeout(2_000),
    });
    const body = (await response.json()) as { server_version?: unknown };
    return typeof body.server_version === 'string' ? body.server_version : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Each port the server would listen on is free, or taken. Taken by this server, already running (its
 * health check answers on PORT), is no problem to fix: the check says so, and that the embedded
 * Temporal's ports are then most likely that server's.
 */
const ports: Check = async (config) => {
  const wanted = [
    { name: 'PORT', port: config.PORT, host: config.HOST },
    ...(config.TEMPORAL_ADDRESS
      ? []
      : [
          { name: 'TEMPORAL_PORT', port: config.TEMPORAL_PORT, host: '127.0.0.1' },
          { name: 'TEMPORAL_UI_PORT', port: config.TEMPORAL_UI_PORT, host: '127.0.0.1' },
        ]),
  ];
  const free = await Promise.all(wanted.map(({ host, port }) => portFree(host, port)));
  const running = free[0] ? undefined : await runningServerVersion(config.HOST, config.PORT);
  return wanted.map(({ name, port, host }, i) => {
    if (free[i]) return passed(`port ${port}`, `${name} is free on ${host}`);
    if (running !== undefined)
      return noted(
        `port ${port}`,
        i === 0
          ? `${name} ${port} is in use by this server, running (version ${running}; its /v1/health/ answers)`
          : `${name} ${port} is in use, probably by the running server's embedded Temporal`,
      );
    return failed(
      `port ${port}`,
      `${name} ${port} is taken on ${host} (another server running?)`,
      `stop what listens there, or set ${name}`,
    );
  });
};

const models: Check = async (config) => {
  const checks: Promise<CheckResult>[] = [];
  const ask = (name: string, fix: string, call: () => Promise<unknown>) =>
    within(10_000, name, call()).then(
      () => passed(name, 'answers with its key'),
      (error) => failed(name, errorText(error), fix),
    );
  if (config.OPENAI_API_KEY || config.OPENAI_BASE_URL) {
    const client = new OpenAI({
      apiKey: config.OPENAI_API_KEY ?? 'none',
      baseURL: config.OPENAI_BASE_URL,
      maxRetries: 0,
    });
    const where = config.OPENAI_BASE_URL ?? 'api.openai.com';
    checks.push(
      ask(`model provider openai (${where})`, 'check OPENAI_API_KEY and OPENAI_BASE_URL', () =>
        client.models.list(),
      ),
    );
  }
  if (config.ANTHROPIC_API_KEY) {
    const client = new Anthropic({
      apiKey: config.ANTHROPIC_API_KEY,
      baseURL: config.ANTHROPIC_BASE_URL,
      maxRetries: 0,
    });
    checks.push(
      ask('model provider anthropic', 'check ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL', () =>
        client.models.list(),
      ),
    );
  }
  if (!checks.length)
    return failed(
      'model providers',
      'none configured: agents cannot answer',
      'set OPENAI_API_KEY or ANTHROPIC_API_KEY (OPENAI_BASE_URL for Ollama, vLLM, …)',
    );
  return Promise.all(checks);
};

/** Modal, when it has credentials: the Node its SDK needs, and its API taking them. */
const modal: Check = async (config) => {
  const { MODAL_TOKEN_ID: tokenId, MODAL_TOKEN_SECRET: tokenSecret } = config;
  if (!tokenId || !tokenSecret) return [];
  const unsupported = modalUnsupportedReason();
  if (unsupported)
    return failed('Modal', unsupported, 'run the server on Node 22 or 24 (scripts/install-node.sh 24)');
  const client = new ModalClient({
    tokenId,
    tokenSecret,
    ...(config.MODAL_ENVIRONMENT && { environment: config.MODAL_ENVIRONMENT }),
  });
  try {
    await within(15_000, 'Modal', client.apps.fromName(config.MODAL_APP_NAME, { createIfMissing: true }));
    return passed('Modal', `app ${config.MODAL_APP_NAME} answers with the token`);
  } catch (error) {
    return failed('Modal', errorText(error), 'check MODAL_TOKEN_ID and MODAL_TOKEN_SECRET (modal token new)');
  } finally {
    client.close();
  }
};

const CHECKS = [node, python, sandbox, toolEnvironments, temporal, database, ports, models, modal];

export async function runChecks(config: Config): Promise<CheckResult[]> {
  const results = await Promise.all(
    CHECKS.map((check) =>
      check(config).catch((error) => failed(check.name, errorText(error), 'see the error above')),
    ),
  );
  return results.flat();
}

export function checkReport(results: CheckResult[]): string {
  const lines = results.map((r) =>
    r.note
      ? `  • ${r.name}: ${r.detail}`
      : r.ok
        ? `  ✓ ${r.name}: ${r.detail}`
        : `  ✗ ${r.name}: ${r.detail}\n      → ${r.fix}`,
  );
  const bad = results.filter((r) => !r.ok).length;
  const verdict = bad ? `${bad} problem${bad > 1 ? 's' : ''} to fix` : 'everything the server needs is here';
  return `${lines.join('\n')}\n\n${verdict}\n`;
}
