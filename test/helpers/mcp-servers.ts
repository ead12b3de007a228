import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { CALL_ID_META_KEY } from '../../src/mcp/call-id';
import { projectRoot } from '../../src/paths';
import { freePort } from './env';
import { eventually } from './eventually';
import { startProcess, type StartedProcess } from './process';

/** An MCP reference server's installed file (started with node, never through npx). */
export const mcpServerFile = (name: 'everything' | 'filesystem' | 'memory') =>
  path.join(projectRoot, 'node_modules', '@modelcontextprotocol', `server-${name}`, 'dist', 'index.js');

export const stdioConfig = (
  name: 'everything' | 'filesystem' | 'memory',
  args: string[] = [],
  env?: Record<string, string>,
) => ({
  mcp_server_type: 'stdio' as const,
  command: process.execPath,
  args: [mcpServerFile(name), ...args],
  ...(env ? { env } : {}),
});

/** server-everything in one of its HTTP modes, on a free port; resolves once it listens. */
export async function startHttpEverything(
  mode: 'streamableHttp' | 'sse',
  port?: number,
): Promise<{ url: string; port: number; child: ChildProcess }> {
  const listenOn = port ?? (await freePort());
  const child = spawn(process.execPath, [mcpServerFile('everything'), mode], {
    env: { PATH: process.env.PATH ?? '', PORT: String(listenOn) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => /listening|running/i.test(String(chunk)) && resolve());
    child.on('exit', (code) => reject(new Error(`server-everything ${mode} exited (${code})`)));
  });
  const url = `http://127.0.0.1:${listenOn}${mode === 'sse' ? '/sse' : '/mcp'}`;
  return { url, port: listenOn, child };
}

export interface AuthProxy {
  /** The proxy's origin; paths pass through to the target. */
  origin: string;
  /** The headers of every request that reached the proxy. */
  requests: http.IncomingHttpHeaders[];
  /** Whether it lets the right token through (a revoked token is refused from then on). */
  accepting: boolean;
  close(): Promise<void>;
}

/**
 * An HTTP server in front of an MCP server on `targetPort` that passes on only requests carrying
 * `Authorization: Bearer <token>`, and answers 401 to the rest.
 */
export async function startAuthProxy(targetPort: number, token: string): Promise<AuthProxy> {
  const server = http.createServer((req, res) => {
    proxy.requests.push(req.headers);
    if (!proxy.accepting || req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    const upstream = http.request(
      { host: '127.0.0.1', port: targetPort, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const proxy: AuthProxy = {
    origin: `http://127.0.0.1:${port}`,
    requests: [],
    accepting: true,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}

/**
 * test/fixtures/mcp/elicit-server.mjs on a free port, as a process of its own: its tool book_table
 * asks the user mid-call; `answers` lists every elicitation answer it got.
 */
export async function startElicitServer(): Promise<{
  url: string;
  process: StartedProcess;
  answers: () => Promise<{ action: string; content?: unknown }[]>;
}> {
  const port = await freePort();
  const file = path.join(projectRoot, 'test', 'fixtures', 'mcp', 'elicit-server.mjs');
  const started = startProcess(process.execPath, [file, String(port)], { PATH: process.env.PATH ?? '' });
  const origin = `http://127.0.0.1:${port}`;
  const answers = async () => (await (await fetch(`${origin}/answers`)).json()) as { action: string }[];
  const listening = () =>
    answers().then(
      () => true,
      () => false,
    );
  if (!(await eventually(listening, Boolean)))
    throw new Error(`the elicit server did not start:\n${started.output()}`);
  return { url: `${origin}/mcp`, process: started, answers };
}

/** A tools/call that test/fixtures/mcp/input-required-server.mjs got. */
export interface InputRequiredCall {
  name: string;
  arguments: Record<string, unknown>;
  inputResponses?: Record<string, unknown>;
  requestState?: string;
  stateVerified: boolean;
}

/**
 * test/fixtures/mcp/input-required-server.mjs, as a process of its own on `port` (a free one unless
 * given: a restart takes the same), its requestState signed with `secret`: a server of the 2026-07-28
 * revision only, whose tool book_table asks through an input-required result.
 */
export async function startInputRequiredServer(
  secret: string,
  port?: number,
): Promise<{
  url: string;
  port: number;
  process: StartedProcess;
  calls: () => Promise<InputRequiredCall[]>;
}> {
  const listenOn = port ?? (await freePort());
  const file = path.join(projectRoot, 'test', 'fixtures', 'mcp', 'input-required-server.mjs');
  const started = startProcess(process.execPath, [file, String(listenOn), secret], {
    PATH: process.env.PATH ?? '',
  });
  const origin = `http://127.0.0.1:${listenOn}`;
  const calls = async () => (await (await fetch(`${origin}/calls`)).json()) as InputRequiredCall[];
  const listening = () =>
    calls().then(
      () => true,
      () => false,
    );
  if (!(await eventually(listening, Boolean)))
    throw new Error(`the input-required server did not start:\n${started.output()}`);
  return { url: `${origin}/mcp`, port: listenOn, process: started, calls };
}

/** Streamable HTTP without sessions: each POST (its body parsed) answered by a server of its own. */
export const statelessMcp =
  (mcpServer: () => McpServer): express.RequestHandler =>
  async (req, res) => {
    const server = mcpServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close().then(() => server.close()));
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  };

/** A tools/call a counting MCP server got: its tool, the call id its `_meta` carried, when it ran. */
export interface CountedMcpCall {
  tool: string;
  callId: unknown;
  start: number;
  end?: number;
}

/**
 * An MCP server (streamable HTTP, stateless) whose tools take `ms` and count every start: `slow_write`,
 * annotated as nothing (a write, for all the client knows), and `slow_read` (`readOnlyHint`). A call
 * runs to its end whatever the client does meanwhile, as a real side effect would. `calls` lists each
 * start with the tool call id of its `_meta` (src/mcp/call-id.ts).
 */
export async function startCountingMcpServer(): Promise<{
  url: string;
  calls: CountedMcpCall[];
  close(): Promise<void>;
}> {
  const calls: CountedMcpCall[] = [];
  const tool =
    (name: string) =>
    async ({ ms }: { ms: number }, extra: { _meta?: Record<string, unknown> }) => {
      const call: CountedMcpCall = { tool: name, callId: extra._meta?.[CALL_ID_META_KEY], start: Date.now() };
      calls.push(call);
      await new Promise((resolve) => setTimeout(resolve, ms));
      call.end = Date.now();
      return { content: [{ type: 'text' as const, text: `${name} done` }] };
    };
  const mcpServer = () => {
    const server = new McpServer({ name: 'counting-test', version: '1.0.0' });
    const inputSchema = { ms: z.number().int().min(0) };
    server.registerTool('slow_write', { description: 'Writes slowly.', inputSchema }, tool('slow_write'));
    server.registerTool(
      'slow_read',
      { description: 'Reads slowly.', inputSchema, annotations: { readOnlyHint: true } },
      tool('slow_read'),
    );
    return server;
  };
  const app = express();
  app.post('/mcp', express.json(), statelessMcp(mcpServer));
  app.get('/mcp', (_req, res) => void res.status(405).end());
  const port = await freePort();
  const listening = await new Promise<http.Server>((resolve) => {
    const server = app.listen(port, '127.0.0.1', () => resolve(server));
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    close: () =>
      new Promise((resolve) => {
        listening.closeAllConnections();
        listening.close(() => resolve());
      }),
  };
}
