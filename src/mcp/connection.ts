/**
 * Talking to one MCP server with the MCP TypeScript SDK: connect over its transport (stdio, started as
 * MCP_STDIO says, see stdio-sandbox.ts; streamable HTTP, in the 2026-07-28 revision when the server
 * speaks it (revision-2026.ts), else 2025-11-25, falling back to SSE; or SSE), list its tools,
 * call one. Every step has its own timeout, so an unreachable server is a clear error, never a hang.
 */
import { Client, type ClientOptions } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  LATEST_PROTOCOL_VERSION,
  ListToolsResultSchema,
  McpError,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../schemas/mcp-server';
import { McpStdioRefusedError, type McpStdioLauncher } from './stdio-sandbox';
import { withRequestHeaders, type ToolSchemas } from './request-headers';
import { MODERN_CAPABILITIES, ModernClient, ModernHttpTransport, refusalsAsAnswers } from './revision-2026';

export type { McpServerConfig };

/** An OAuth-protected server's provider (oauth.ts), with the fetch its OAuth requests go through. */
export type McpAuthProvider = OAuthClientProvider & { fetchFn: FetchLike };

export interface McpTimeouts {
  connectMs: number;
  listMs: number;
}

/** How much of a stdio server's stderr an error that it did not connect quotes. */
const STDERR_TAIL_CHARS = 1000;

const CLIENT_INFO = { name: 'letta-temporal', version: '0.1.0' };

/** The server cannot be reached, or broke off: worth another try later. */
export class McpConnectionError extends Error {
  override name = 'McpConnectionError';
}

/** The server refused our credentials: another try with the same ones cannot help. */
export class McpAuthError extends Error {
  override name = 'McpAuthError';
}

/** The server did not answer in time. */
export class McpTimeoutError extends Error {
  override name = 'McpTimeoutError';
}

/** 401 and 403 answers, whichever transport got them. */
export function isAuthFailure(error: unknown): boolean {
  if (error instanceof UnauthorizedError || error instanceof McpAuthError) return true;
  const code = (error as { code?: unknown })?.code;
  return !(error instanceof McpError) && (code === 401 || code === 403);
}

export const isRequestTimeout = (error: unknown) =>
  error instanceof McpError && error.code === ErrorCode.RequestTimeout;

/** The token in `auth_header` (Authorization by default, where a bare token is sent as a Bearer one). */
function headersOf(config: Extract<McpServerConfig, { server_url: string }>): Record<string, string> {
  const header = config.auth_header || 'Authorization';
  const token = config.auth_token;
  const value =
    token && header.toLowerCase() === 'authorization' && !/^\w+ /.test(token) ? `Bearer ${token}` : token;
  return { ...(config.custom_headers ?? {}), ...(value ? { [header]: value } : {}) };
}

/** What a connection needs besides its config. */
export interface ConnectOptions {
  /** Called when the server says its tool list changed. */
  onToolsChanged?: () => void;
  /** The input schemas of the tools called on the connection, for their headers (request-headers.ts). */
  schemas?: ToolSchemas;
  /** Authorizes with an OAuth-protected server. */
  authProvider?: McpAuthProvider;
}

function transportsFor(
  config: McpServerConfig,
  stdio: McpStdioLauncher,
  options: ConnectOptions,
): (() => Promise<Transport>)[] {
  if (config.mcp_server_type === 'stdio') return [() => stdio.transport(config)];
  const url = new URL(config.server_url);
  const requestInit = { headers: headersOf(config) };
  const { authProvider } = options;
  const oauth = authProvider && { authProvider, fetch: authProvider.fetchFn };
  const sse = async () =>
    new SSEClientTransport(url, {
      requestInit,
      eventSourceInit: { fetch: sseFetch(requestInit.headers, authProvider?.fetchFn) },
      ...oauth,
    });
  if (config.mcp_server_type === 'sse') return [sse];
  // Streamable HTTP first; servers that speak only the older HTTP+SSE protocol refuse it, then SSE.
  return [async () => streamableTransport(config, options), sse];
}

/** A streamable HTTP transport: a new session, or the one named (`sessionId`) taken up again. */
function streamableTransport(
  config: Extract<McpServerConfig, { server_url: string }>,
  { authProvider, schemas = new Map() }: ConnectOptions,
  sessionId?: string,
): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(config.server_url), {
    requestInit: { headers: headersOf(config) },
    authProvider,
    fetch: withRequestHeaders(schemas, authProvider?.fetchFn),
    sessionId,
  });
}

/**
 * The end of what a stdio server writes on stderr, for the error when it does not connect. Reading it
 * also keeps a server that writes much there from blocking on a full pipe.
 */
function stderrTail(transport: Transport): () => string {
  let tail = '';
  if (transport instanceof StdioClientTransport)
    transport.stderr?.on('data', (chunk: Buffer) => (tail = (tail + chunk).slice(-STDERR_TAIL_CHARS)));
  return () => tail.trim().replace(/\s*\n\s*/g, '; ');
}

/**
 * The SSE stream's GET carries the same headers as the POSTs (the SDK leaves them to eventSourceInit),
 * through the OAuth provider's fetch where there is one (its DPoP proofs).
 */
const sseFetch =
  (headers: Record<string, string>, base: FetchLike = fetch) =>
  (url: string | URL, init?: RequestInit): Promise<Response> =>
    base(url, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), ...headers } });

/**
 * What the client answers a request from the server it offers no capability for, at once: it declares
 * no sampling or roots, and a server that asks anyway, as a tool asking for a model
 * completion mid-call (`sampling/createMessage`), gets an error that says so instead of waiting on us.
 */
async function refuseServerRequest(request: { method: string }): Promise<never> {
  const why =
    request.method === 'sampling/createMessage'
      ? 'this client does not offer sampling: it declares no sampling capability and asks no model for the server'
      : `this client does not handle ${request.method} requests`;
  // A plain error with the code: McpError would prefix its message with the code, and the server adds its own.
  throw Object.assign(new Error(why), { code: ErrorCode.MethodNotFound });
}

/**
 * What the client offers: form-mode elicitation (answered by the pool, src/mcp/client-pool.ts), with
 * the SDK filling in the requested schema's defaults (SEP-1034); tool-list change notices when wanted.
 */
const clientOptions = (onToolsChanged?: () => void): ClientOptions => ({
  capabilities: { elicitation: { form: { applyDefaults: true } } },
  ...(onToolsChanged && {
    listChanged: { tools: { autoRefresh: false, onChanged: () => onToolsChanged() } },
  }),
});

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new McpTimeoutError(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A connected client: on streamable HTTP, one of the 2026-07-28 revision when the server speaks it,
 * else one that initialized (2025-11-25 or older). A refusal of the credentials is an McpAuthError, a server too slow to answer an
 * McpTimeoutError and a stdio server that may not run here an McpStdioRefusedError, without trying the
 * next transport; anything else an McpConnectionError naming every transport's failure.
 * `options` say what else the connection needs (ConnectOptions).
 */
export async function connectMcp(
  config: McpServerConfig,
  timeouts: McpTimeouts,
  stdio: McpStdioLauncher,
  options: ConnectOptions = {},
): Promise<Client> {
  const { onToolsChanged } = options;
  if (config.mcp_server_type === 'streamable_http') {
    const modern = await connectModern(config, timeouts, options);
    if (modern) return modern;
  }
  const failures: string[] = [];
  for (const transport of transportsFor(config, stdio, options)) {
    const client = new Client(CLIENT_INFO, clientOptions(onToolsChanged));
    client.fallbackRequestHandler = refuseServerRequest;
    let stderr = () => '';
    try {
      const started = await transport();
      stderr = stderrTail(started);
      await withTimeout(client.connect(started), timeouts.connectMs, 'connecting to the MCP server');
      return client;
    } catch (error) {
      await client.close().catch(() => undefined);
      if (isAuthFailure(error))
        throw new McpAuthError(`the MCP server refused the credentials: ${(error as Error).message}`);
      if (error instanceof McpTimeoutError || error instanceof McpStdioRefusedError) throw error;
      const said = stderr();
      failures.push(`${(error as Error).message}${said ? ` (its stderr: ${said})` : ''}`);
    }
  }
  throw new McpConnectionError(`cannot connect to the MCP server: ${failures.join('; then: ')}`);
}

/**
 * A client of the 2026-07-28 revision (revision-2026.ts) when the server speaks it; none when it is
 * a legacy server, or when it cannot be reached (the legacy transports then say why).
 */
async function connectModern(
  config: Extract<McpServerConfig, { server_url: string }>,
  timeouts: McpTimeouts,
  { authProvider, schemas = new Map() }: ConnectOptions,
): Promise<Client | undefined> {
  const transport = new ModernHttpTransport(
    new URL(config.server_url),
    {
      requestInit: { headers: headersOf(config) },
      authProvider,
      fetch: refusalsAsAnswers(withRequestHeaders(schemas, authProvider?.fetchFn)),
    },
    CLIENT_INFO,
  );
  const client = new ModernClient(CLIENT_INFO, { capabilities: MODERN_CAPABILITIES });
  client.fallbackRequestHandler = refuseServerRequest;
  let modern = false;
  try {
    await client.connect(transport);
    modern = await withTimeout(client.discover(), timeouts.connectMs, 'connecting to the MCP server');
  } catch (error) {
    await client.close().catch(() => undefined);
    if (isAuthFailure(error))
      throw new McpAuthError(`the MCP server refused the credentials: ${(error as Error).message}`);
    if (error instanceof McpTimeoutError) throw error;
    return undefined;
  }
  if (modern) return client;
  await client.close().catch(() => undefined);
}

/**
 * Every tool the server lists, page after page. Asked for with a plain request: the SDK's `listTools`
 * also compiles every output schema, and one it cannot compile would fail the whole list; results are
 * checked against the stored schemas instead (tool-result.ts).
 */
export async function listMcpTools(client: Client, timeouts: McpTimeouts): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const params = cursor ? { cursor } : {};
    const page = await client
      .request({ method: 'tools/list', params }, ListToolsResultSchema, { timeout: timeouts.listMs })
      .catch((error: unknown) => {
        if (isRequestTimeout(error))
          throw new McpTimeoutError(`listing the tools took longer than ${timeouts.listMs} ms`);
        throw error;
      });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

/**
 * A client on a streamable HTTP session the server still keeps, without a new initialize: to take up
 * a call that a process which stopped had open (its elicitation answered, src/mcp/client-pool.ts).
 */
export async function joinMcpSession(
  config: McpServerConfig,
  sessionId: string,
  timeouts: McpTimeouts,
  options: ConnectOptions = {},
): Promise<Client> {
  if (config.mcp_server_type !== 'streamable_http')
    throw new McpConnectionError(`a ${config.mcp_server_type} server's session cannot be taken up again`);
  const transport = streamableTransport(config, options, sessionId);
  transport.setProtocolVersion(LATEST_PROTOCOL_VERSION);
  const client = new Client(CLIENT_INFO, clientOptions());
  client.fallbackRequestHandler = refuseServerRequest;
  await withTimeout(client.connect(transport), timeouts.connectMs, 'joining the MCP session');
  return client;
}
