import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';

/**
 * A local stand-in for E2B's cloud that the real, unmodified `@e2b/code-interpreter` SDK talks to over
 * HTTP: the control plane (`POST /v2/sandboxes`, `DELETE /sandboxes/:id`) and the code interpreter
 * inside each sandbox (`POST /execute`, streamed NDJSON). Code really runs on this host (python3,
 * node), so it is for tests only.
 *
 * The SDK is pointed here with `apiUrl` and `sandboxUrl`, not `debug: true`: debug mode skips the API
 * calls of create and kill altogether and fixes the sandbox to localhost:49999. With `sandboxUrl` set
 * the SDK sends every sandbox's traffic to that one URL and names the sandbox in the `E2b-Sandbox-Id`
 * header, so one server on a random port serves both planes.
 *
 * Not served: envd (commands, files), code contexts, listing. Each execution is a fresh process, so
 * unlike Jupyter no state carries over between `runCode` calls.
 */

/** One request the server received (control plane and sandbox alike), in arrival order. */
export interface E2BRequest {
  method: string;
  /** Without the query string: `/v2/sandboxes`, `/sandboxes/<id>`, `/execute`... */
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body; undefined when there was none. */
  body: unknown;
}

export interface E2BSdkOptions {
  apiKey: string;
  apiUrl: string;
  sandboxUrl: string;
  /** Explicit, so a stray `E2B_DEBUG=true` cannot make the SDK skip this server. */
  debug: false;
}

export interface E2BServer {
  /** The origin serving both the API and every sandbox. */
  url: string;
  /** The only key the API accepts (others get a 401, as from E2B). */
  apiKey: string;
  /** Spread into `Sandbox.create(...)` so the real SDK talks to this server. */
  sdkOptions: E2BSdkOptions;
  /** The same as environment variables, for a process that lets the SDK read its environment. */
  env: Record<string, string>;
  requests: E2BRequest[];
  /** Sandboxes created and not killed yet. */
  liveSandboxes(): number;
  /** Executions whose process still runs. */
  runningExecutions(): number;
  close(): Promise<void>;
}

interface Execution {
  child: ChildProcess;
  res: http.ServerResponse;
}

interface FakeSandbox {
  id: string;
  accessToken: string;
  /** Its `envs` at creation, under every execution's own `envs`. */
  envs: Record<string, string>;
  /** Its home folder and the executions' working directory. */
  home: string;
  executionCount: number;
  running: Set<Execution>;
  /** Process groups of all its executions: what a cell left running in the background dies with it. */
  groups: Set<number>;
}

interface ExecuteRequest {
  code?: string;
  language?: string;
  context_id?: string;
  env_vars?: Record<string, string>;
}

type OutputMessage = { type: string } & Record<string, unknown>;

interface Program {
  command: string;
  args: string[];
  /** The code, handed over on stdin: no temp files, and the cell's input() sees end of file. */
  stdin: string;
}

// Runs the cell as IPython would: the value of a final expression is the result (its repr), and an
// exception becomes an error message with the cell's frames only, not a dump on stderr.
// Results and errors go to fd 3, so they cannot mix with what the cell prints.
const PYTHON_RUNNER = `
import ast, json, linecache, os, sys, traceback

def report(kind, **fields):
    os.write(3, (json.dumps(dict(type=kind, **fields)) + "\\n").encode())

def cell_traceback(error):
    frames = traceback.extract_tb(error.__traceback__)
    while frames and frames[0].filename != "<cell>":
        frames.pop(0)
    lines = traceback.format_exception_only(type(error), error)
    if frames:
        lines = ["Traceback (most recent call last):\\n"] + traceback.format_list(frames) + lines
    return "".join(lines)

source = sys.stdin.read()
linecache.cache["<cell>"] = (len(source), None, source.splitlines(True), "<cell>")
scope = {"__name__": "__main__", "__builtins__": __builtins__}
try:
    tree = ast.parse(source, "<cell>")
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<cell>", "exec"), scope)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), scope)
        if value is not None:
            report("result", text=repr(value), is_main_result=True)
except SystemExit:
    raise
except BaseException as error:
    report("error", name=type(error).__name__, value=str(error), traceback=cell_traceback(error))
    sys.exit(1)
`;

// The same for JavaScript: a script's completion value is the result; top-level await falls back to
// an async function (no result then). Uncaught errors, later ones included, become the error message.
const NODE_RUNNER = `
const fs = require('node:fs');
const util = require('node:util');
const vm = require('node:vm');
const report = (type, fields) => fs.writeSync(3, JSON.stringify({ type, ...fields }) + '\\n');
const fail = (error) => {
  const e = error instanceof Error ? error : { name: 'Error', message: util.inspect(error), stack: '' };
  report('error', { name: e.name, value: e.message, traceback: e.stack ?? '' });
  process.exit(1);
};
const show = (value) => value === undefined || report('result', { text: util.inspect(value), is_main_result: true });
process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);
const source = fs.readFileSync(0, 'utf8');
const compile = () => {
  try {
    return { script: new vm.Script(source, { filename: 'cell.js' }), wrapped: false };
  } catch (error) {
    if (!(error instanceof SyntaxError) || !source.includes('await')) throw error;
    const body = '(async () => {\\n' + source + '\\n})()';
    return { script: new vm.Script(body, { filename: 'cell.js', lineOffset: -1 }), wrapped: true };
  }
};
try {
  const { script, wrapped } = compile();
  const value = script.runInThisContext();
  if (wrapped) value.catch(fail);
  else show(value);
} catch (error) {
  fail(error);
}
`;

const send = (res: http.ServerResponse, message: OutputMessage) => res.write(`${JSON.stringify(message)}\n`);

const sendJson = (res: http.ServerResponse, status: number, body?: unknown) =>
  body === undefined
    ? res.writeHead(status).end()
    : res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

/** E2B's API errors carry `code` and `message`; the SDK reads `code` to tell a 404 on kill. */
const apiError = (res: http.ServerResponse, code: number, message: string) =>
  sendJson(res, code, { code, message });

/** Sandbox ids look like E2B's: 20 lowercase alphanumerics. */
const sandboxId = () => randomUUID().replaceAll('-', '').slice(0, 20);

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  return raw ? JSON.parse(raw) : undefined;
}

/** Calls `onLine` with each complete line, newline kept (as Jupyter's stream chunks), then the rest. */
function readLines(stream: Readable, onLine: (line: string) => void) {
  let buffer = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf('\n')) !== -1) {
      onLine(buffer.slice(0, end + 1));
      buffer = buffer.slice(end + 1);
    }
  });
  stream.on('end', () => buffer && onLine(buffer));
}

function parseReport(line: string): OutputMessage | undefined {
  try {
    return JSON.parse(line) as OutputMessage;
  } catch {
    return undefined;
  }
}

/** Kills a process group: an execution and whatever it started. */
function killGroup(pgid: number) {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

const isRunning = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

async function transpileTs(code: string): Promise<{ js: string; error?: OutputMessage }> {
  const ts = await import('typescript');
  const out = ts.transpileModule(code, {
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      esModuleInterop: true,
    },
    reportDiagnostics: true,
  });
  const first = out.diagnostics?.[0];
  if (!first) return { js: out.outputText };
  const value = ts.flattenDiagnosticMessageText(first.messageText, '\n');
  return { js: '', error: { type: 'error', name: 'SyntaxError', value, traceback: `SyntaxError: ${value}` } };
}

/** How to run a cell, or the error to answer with (bad TypeScript); undefined for other languages. */
async function programFor(
  language: string,
  code: string,
): Promise<{ program?: Program; error?: OutputMessage } | undefined> {
  if (language === 'python') {
    return { program: { command: 'python3', args: ['-u', '-B', '-c', PYTHON_RUNNER], stdin: code } };
  }
  const isJs = language === 'js' || language === 'javascript';
  if (!isJs && language !== 'ts' && language !== 'typescript') return undefined;
  const node = (stdin: string) => ({ command: process.execPath, args: ['-e', NODE_RUNNER], stdin });
  // ES module imports do not run as a script: TypeScript's transpiler turns them into require().
  if (isJs && !/^\s*import\s/m.test(code)) return { program: node(code) };
  const { js, error } = await transpileTs(code);
  return error ? { error } : { program: node(js) };
}

/** A sandbox's bare environment: the host's PATH and nothing else of the host. */
const baseEnv = (home: string): Record<string, string> => ({
  PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
  HOME: home,
  LANG: 'C.UTF-8',
  PYTHONUNBUFFERED: '1',
  PYTHONIOENCODING: 'utf-8',
});

function exitError(code: number | null, signal: NodeJS.Signals | null): OutputMessage {
  const value = signal ? `process killed by ${signal}` : `process exited with code ${code}`;
  return { type: 'error', name: 'ProcessExit', value, traceback: value };
}

/** Streams one execution: its count, stdout and stderr lines as they come, then results, error, end. */
function run(sandbox: FakeSandbox, program: Program, envs: Record<string, string>, res: http.ServerResponse) {
  const child = spawn(program.command, program.args, {
    cwd: sandbox.home,
    env: { ...baseEnv(sandbox.home), ...sandbox.envs, ...envs },
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
  });
  const execution = { child, res };
  sandbox.running.add(execution);
  if (child.pid !== undefined) sandbox.groups.add(child.pid);
  child.stdin!.on('error', () => undefined).end(program.stdin);
  readLines(child.stdout!, (text) => send(res, { type: 'stdout', text }));
  readLines(child.stderr!, (text) => send(res, { type: 'stderr', text }));
  const reports: OutputMessage[] = [];
  readLines(child.stdio[3] as Readable, (line) => {
    // A cell that writes to fd 3 itself must not crash the test process.
    const report = parseReport(line);
    if (report) reports.push(report);
  });
  // The SDK's timeoutMs never reaches the server: on timeout it aborts the request, so a closed
  // response is the signal to stop the cell.
  res.on('close', () => isRunning(child) && child.pid !== undefined && killGroup(child.pid));
  child.on('error', (error) => reports.push({ type: 'error', name: 'SpawnError', value: error.message }));
  child.on('close', (code, signal) => {
    sandbox.running.delete(execution);
    if (res.destroyed || res.writableEnded) return;
    for (const report of reports) send(res, report);
    if (code !== 0 && !reports.some((report) => report.type === 'error')) send(res, exitError(code, signal));
    send(res, { type: 'end_of_execution' });
    res.end();
  });
}

async function execute(sandbox: FakeSandbox, request: ExecuteRequest, res: http.ServerResponse) {
  const language = request.language ?? 'python';
  const prepared = await programFor(language, request.code ?? '');
  if (!prepared) return sendJson(res, 400, { error: `language not supported by the fake: ${language}` });
  res.writeHead(200, { 'content-type': 'application/x-ndjson' });
  // Headers now: the SDK's request timeout runs until they arrive, its execution timeout after.
  res.flushHeaders();
  send(res, { type: 'number_of_executions', execution_count: ++sandbox.executionCount });
  if (prepared.program) return run(sandbox, prepared.program, request.env_vars ?? {}, res);
  send(res, prepared.error!);
  send(res, { type: 'end_of_execution' });
  res.end();
}

export async function startE2BServer(apiKey = 'e2b_test'): Promise<E2BServer> {
  const requests: E2BRequest[] = [];
  const sandboxes = new Map<string, FakeSandbox>();

  function create(res: http.ServerResponse, body: { templateID?: string; envVars?: Record<string, string> }) {
    const sandbox: FakeSandbox = {
      id: sandboxId(),
      accessToken: randomBytes(16).toString('hex'),
      envs: body.envVars ?? {},
      home: fs.mkdtempSync(path.join(os.tmpdir(), 'fake-e2b-sandbox-')),
      executionCount: 0,
      running: new Set(),
      groups: new Set(),
    };
    sandboxes.set(sandbox.id, sandbox);
    sendJson(res, 201, {
      sandboxID: sandbox.id,
      templateID: body.templateID ?? 'code-interpreter-v1',
      clientID: 'fake',
      alias: body.templateID,
      envdVersion: '0.4.0',
      envdAccessToken: sandbox.accessToken,
      domain: null,
    });
  }

  /** Like a VM going away: running cells die and their connections drop mid-stream. */
  function destroy(sandbox: FakeSandbox) {
    sandboxes.delete(sandbox.id);
    for (const pgid of sandbox.groups) killGroup(pgid);
    for (const { res } of sandbox.running) res.destroy();
    fs.rmSync(sandbox.home, { recursive: true, force: true });
  }

  function api(method: string, route: string, body: unknown, res: http.ServerResponse) {
    const [, id, action] = /^\/sandboxes\/([^/]+)(?:\/(\w+))?$/.exec(route) ?? [];
    const sandbox = id ? sandboxes.get(id) : undefined;
    if (method === 'POST' && /^\/(v2\/)?sandboxes$/.test(route)) return create(res, (body ?? {}) as object);
    if (!id) return apiError(res, 404, `not served by the fake: ${method} ${route}`);
    if (!sandbox) return apiError(res, 404, `sandbox "${id}" not found`);
    if (method === 'DELETE' && !action) {
      destroy(sandbox);
      return sendJson(res, 204);
    }
    if (method === 'POST' && action === 'timeout') return sendJson(res, 204);
    apiError(res, 404, `not served by the fake: ${method} ${route}`);
  }

  /** Sandbox traffic: the real edge answers 502 for a sandbox that is gone; the SDK reads it so. */
  function inSandbox(req: http.IncomingMessage, route: string, body: unknown, res: http.ServerResponse) {
    const sandbox = sandboxes.get(String(req.headers['e2b-sandbox-id']));
    if (!sandbox) return res.writeHead(502).end('The sandbox was not found');
    if (req.method === 'GET' && route === '/health') return sendJson(res, 204);
    if (req.headers['x-access-token'] !== sandbox.accessToken) return sendJson(res, 401, 'Unauthorized');
    if (req.method === 'POST' && route === '/execute') {
      return execute(sandbox, (body ?? {}) as ExecuteRequest, res);
    }
    sendJson(res, 404, { error: `not served by the fake: ${req.method} ${route}` });
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const route = new URL(req.url ?? '/', 'http://fake').pathname;
    let body: unknown;
    try {
      body = await readJson(req);
    } catch {
      return sendJson(res, 400, { code: 400, message: 'body is not JSON' });
    }
    requests.push({ method: req.method ?? '', path: route, headers: req.headers, body });
    if (req.headers['e2b-sandbox-id'] !== undefined) return inSandbox(req, route, body, res);
    if (req.headers['x-api-key'] !== apiKey) return apiError(res, 401, 'Invalid API key');
    return api(req.method ?? '', route, body, res);
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error) => {
      if (!res.headersSent) sendJson(res, 500, { code: 500, message: String(error) });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    apiKey,
    sdkOptions: { apiKey, apiUrl: url, sandboxUrl: url, debug: false },
    env: { E2B_API_KEY: apiKey, E2B_API_URL: url, E2B_SANDBOX_URL: url, E2B_DEBUG: 'false' },
    requests,
    liveSandboxes: () => sandboxes.size,
    runningExecutions: () => [...sandboxes.values()].reduce((sum, sandbox) => sum + sandbox.running.size, 0),
    close: () =>
      new Promise((resolve) => {
        for (const sandbox of sandboxes.values()) destroy(sandbox);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
