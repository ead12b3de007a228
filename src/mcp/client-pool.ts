/**
 * The MCP connections of one process: one client per registered server and config (and per identity,
 * for a server whose OAuth tokens are kept per identity), made on first use and reused by every call
 * after it. A client that breaks off is dropped; the next call connects again,
 * waiting longer after each connection that failed in a row.
 */
import { mcpConnectionFailures, trackMcpPool } from '../observability/metrics';
import crypto from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  type ElicitResult,
  type Progress,
  type Task,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import {
  connectMcp,
  isAuthFailure,
  isRequestTimeout,
  joinMcpSession,
  listMcpTools,
  McpAuthError,
  McpConnectionError,
  McpTimeoutError,
  type McpServerConfig,
  type McpTimeouts,
} from './connection';
import { McpStdioRefusedError, type McpStdioLauncher } from './stdio-sandbox';
import type { ToolSchemas } from './request-headers';
import { callToolAsTask, runsAsTask, type TaskSupport } from './tasks';
import { callIdMeta } from './call-id';
import type { Logger } from '../logger';
import type { McpOauth } from './oauth';
import type { ElicitationSession, InputRetry } from '../db/mcp-elicitations';
import { isModernClient } from './revision-2026';
import {
  callThroughInputs,
  continueRound,
  ToolCallAnswerSchema,
  type ToolCallParams,
} from './input-required';
import { connectWithOauth } from './oauth-connect';
import {
  routeElicitations,
  CallInFlight,
  noteToken,
  track,
  type ElicitationHandling,
  type HeldCall,
  type McpCallOutcome,
} from './elicited-calls';

export interface McpPoolOptions {
  timeouts: McpTimeouts;
  /** How stdio servers are started (MCP_STDIO). */
  stdio: McpStdioLauncher;
  /** The wait before the second connection attempt in a row; it doubles with each failure after. */
  reconnectInitialMs: number;
  reconnectMaxMs: number;
  /** How often a task's status is asked for when its server suggests no interval (tasks.ts). */
  taskPollMs: number;
  /** How long a call paused for an elicitation is kept open for its answer (MCP_ELICITATION_HOLD_MS). */
  elicitationHoldMs: number;
  /** How many input-required results in a row one call answers (MCP_INPUT_ROUNDS, input-required.ts). */
  inputRounds: number;
  /** Called when a server says its tool list changed, with the server's id and its tools now. */
  onToolsChanged?: (serverId: string, tools: Tool[]) => Promise<void>;
  /** OAuth for protected HTTP servers (oauth.ts); none: their 401 is a refusal. */
  oauth?: McpOauth;
  log: Logger;
}

export interface McpServerRef {
  id: string;
  config: McpServerConfig;
  /** The identity a call acts for, on a server whose OAuth tokens are kept per identity (oauth.ts). */
  identityId?: string;
}

/** Where a server's client is kept: one per server, or per server and identity. */
const slotOf = ({ id, identityId }: McpServerRef) => (identityId ? `${id}/${identityId}` : id);

export interface McpCallOptions {
  timeoutMs: number;
  /** The tool's input schema as listed, for the headers its marked arguments give (request-headers.ts). */
  inputSchema?: Record<string, unknown>;
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
  /** The tool's `execution.taskSupport`: whether it runs as a task (tasks.ts). */
  taskSupport?: TaskSupport;
  /** A task this call started before (a retried attempt): resumed, the tool not called again. */
  taskId?: string;
  /** Whether an abort of `signal` cancels the call's task too (tasks.ts); unset, every abort does. */
  abortCancelsTask?: () => boolean;
  /** Called with the call's task when the server makes one, and with each status after. */
  onTask?: (task: Task) => void;
  /** How the server's elicitations are answered; without it, declined. */
  elicitation?: ElicitationHandling;
  /** The tool call's id, in the request's `_meta` (call-id.ts). */
  callId?: string;
}

interface Entry {
  /** The config's hash: a changed config needs a new client. */
  key: string;
  client: Promise<Client>;
  /** Set once connected. */
  connected?: Client;
}

/** Keys sorted and empty fields left out: the same config read back from the database has the same key. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, field]) => field !== null && field !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([key, field]) => [key, canonical(field)]),
  );
}

/** What the connection is made from: a changed timeout or retry policy keeps the client (and the calls on it). */
function configKey({
  tool_timeout_seconds: _timeout,
  tools_idempotent: _idempotent,
  ...connection
}: McpServerConfig): string {
  return crypto
    .createHash('sha256')
    .update(JSON.stringify(canonical(connection)))
    .digest('hex');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class McpClientPool {
  private readonly entries = new Map<string, Entry>();
  /** The input schemas of the tools called on each client, which its requests' headers need. */
  private readonly schemas = new WeakMap<Client, ToolSchemas>();
  /** Connection attempts that failed in a row, per slot (slotOf). */
  private readonly failures = new Map<string, number>();
  /** Clients connected without OAuth to servers that may ask for it: a 401 to one starts OAuth. */
  private readonly withoutOauth = new WeakSet<Client>();
  /** Slots whose server answered a request with 401 after connecting without OAuth: it is asked for now. */
  private readonly oauthAsked = new Set<string>();
  /** Calls paused for an elicitation's answer, by the key they paused under (their tool call's id). */
  private readonly held = new Map<string, HeldCall>();
  /** Set by close(): a connection opened after it (a late call, a tools refresh) would outlive the pool. */
  private closed = false;
  /** Stops the pool's connections being reported as metrics. */
  private readonly untrack = trackMcpPool(() =>
    [...this.entries].filter(([, entry]) => entry.connected).map(([serverId]) => serverId),
  );

  constructor(private readonly options: McpPoolOptions) {}

  get oauth(): McpOauth | undefined {
    return this.options.oauth;
  }

  /** The server's client, connected now if there is none yet (or its config changed). */
  client(server: McpServerRef): Promise<Client> {
    if (this.closed) return Promise.reject(new McpConnectionError('the MCP client pool is closed'));
    const key = configKey(server.config);
    const slot = slotOf(server);
    const entry = this.entries.get(slot);
    if (entry?.key === key) return entry.client;
    if (entry) void this.dropSlot(slot);
    const fresh: Entry = { key, client: this.connect(server) };
    this.entries.set(slot, fresh);
    fresh.client.then(
      (client) => (fresh.connected = client),
      () => this.entries.get(slot) === fresh && this.entries.delete(slot),
    );
    return fresh.client;
  }

  /** Throws McpStdioRefusedError for a config this process will not start (stdio.check); connects to nothing. */
  async check(config: McpServerConfig): Promise<void> {
    if (config.mcp_server_type === 'stdio') await this.options.stdio.check(config);
  }

  async listTools(server: McpServerRef): Promise<Tool[]> {
    return this.using(server, (client) => listMcpTools(client, this.options.timeouts));
  }

  /**
   * Calls a tool. The tool's own failure (`isError`) is in the result; a call past its timeout is an
   * McpTimeoutError; a refusal of the credentials an McpAuthError; a broken connection fails as it
   * did, and the next call connects again. Asked for with a plain request, as the tools are listed
   * (connection.ts), so the SDK checks nothing of its own: the caller checks the result against the
   * stored tool's output schema (tool-result.ts). A tool that runs as a task is followed to its end
   * (tasks.ts), or resumed from `taskId`. A call that pauses for an elicitation
   * (`options.elicitation.pauseAs`) ends with what the server asked, and stays open here until
   * `answerHeld` gives the answer. On a server of the 2026-07-28 revision, the server's questions come
   * as input-required results (input-required.ts): a pause holds nothing, `continueInputs` goes on.
   */
  async callTool(
    server: McpServerRef,
    name: string,
    args: Record<string, unknown>,
    options: McpCallOptions,
  ): Promise<McpCallOutcome> {
    return this.using(
      server,
      async (client) => {
        this.schemas.get(client)?.set(name, options.inputSchema);
        if (isModernClient(client)) return this.callThroughInputs(client, { name, arguments: args }, options);
        if (options.taskId || runsAsTask(client, options.taskSupport)) {
          const { taskPollMs: pollMs, timeouts } = this.options;
          const asTask = { ...options, pollMs, cancelTimeoutMs: timeouts.connectMs };
          return { result: await callToolAsTask(client, name, args, asTask) };
        }
        const flight = new CallInFlight(options.elicitation);
        const abort = new AbortController();
        const pauses = options.elicitation && 'pauseAs' in options.elicitation;
        const call = client.request(
          { method: 'tools/call', params: { name, arguments: args, ...callIdMeta(options.callId) } },
          CallToolResultSchema,
          {
            // A paused call waits for its answer as long as a pause is held, past the tool's own timeout.
            timeout: options.timeoutMs + (pauses ? this.options.elicitationHoldMs : 0),
            signal: abort.signal,
            onprogress: options.onProgress,
            onresumptiontoken: (token) => noteToken(client, flight, token),
          },
        );
        track(client, flight, call);
        return this.follow({ flight, call, abort }, name, options);
      },
      options.signal,
    );
  }

  /**
   * Goes on with a call paused on an input-required result, from its stored round (`round`, with the
   * answer just given): its other open questions are handled as `options.elicitation` says, then the
   * tool is called again with the answers and the server's state.
   */
  async continueInputs(
    server: McpServerRef,
    call: ToolCallParams,
    round: InputRetry,
    options: McpCallOptions,
  ): Promise<McpCallOutcome> {
    const next = continueRound(call, round, options.elicitation);
    if ('pending' in next) return next;
    return this.using(
      server,
      async (client) => {
        this.schemas.get(client)?.set(call.name, options.inputSchema);
        return this.callThroughInputs(client, next.params, options);
      },
      options.signal,
    );
  }

  private callThroughInputs(client: Client, first: ToolCallParams, options: McpCallOptions) {
    const send = (params: ToolCallParams) => {
      const abort = new AbortController();
      const withId = { ...params, ...callIdMeta(options.callId) };
      const call = client.request({ method: 'tools/call', params: withId }, ToolCallAnswerSchema, {
        timeout: options.timeoutMs,
        signal: abort.signal,
        onprogress: options.onProgress,
      });
      return this.bounded(call, abort, first.name, options);
    };
    return callThroughInputs(send, first, options.elicitation, this.options.inputRounds);
  }

  /**
   * Answers the elicitation of the call held under `key` and follows the call on: none when this
   * process holds no such call (it was started by a process that stopped, or its hold ran out).
   */
  async answerHeld(key: string, answer: ElicitResult, name: string, options: McpCallOptions) {
    const held = this.held.get(key);
    if (!held) return undefined;
    this.held.delete(key);
    held.respond(answer);
    return this.follow(held, name, options);
  }

  /**
   * Takes up a call on the session its server still keeps, from the event before its elicitation:
   * the server sends the elicitation again, which gets `answer`, then the call's result. The tool is
   * not called again.
   */
  async resumeCall(
    server: McpServerRef,
    session: ElicitationSession,
    answer: ElicitResult,
    name: string,
    options: McpCallOptions,
  ): Promise<McpCallOutcome> {
    const client = await connectWithOauth(this.options.oauth, server, (authProvider) =>
      joinMcpSession(server.config, session.sessionId, this.options.timeouts, {
        authProvider,
        schemas: new Map([[name, options.inputSchema]]),
      }),
    );
    routeElicitations(client);
    const abort = new AbortController();
    // The stream's resumption failing (the session gone, the event no longer stored) is reported here.
    client.onerror = (error) =>
      abort.abort(new McpConnectionError(`the MCP server did not take the call up again: ${error.message}`));
    let answered = false;
    const flight = new CallInFlight({
      answer: () => (answered ? { action: 'cancel' } : ((answered = true), answer)),
    });
    try {
      const call = client.request(
        { method: 'tools/call', params: { name, arguments: {} } },
        CallToolResultSchema,
        {
          timeout: options.timeoutMs,
          signal: abort.signal,
          onprogress: options.onProgress,
          resumptionToken: session.resumptionToken,
        },
      );
      track(client, flight, call);
      return await this.follow({ flight, call, abort }, name, options);
    } finally {
      await client.close().catch(() => undefined);
    }
  }

  /**
   * Waits for the call's result or its next elicitation, whichever comes first, for at most the
   * tool's timeout; a call that pauses is held open under its key.
   */
  private async follow(
    held: Omit<HeldCall, 'respond'>,
    name: string,
    options: McpCallOptions,
  ): Promise<McpCallOutcome> {
    const { flight, call, abort } = held;
    const next = await this.bounded(
      Promise.race([call.then((result) => ({ result })), flight.next().then((asked) => ({ asked }))]),
      abort,
      name,
      options,
    );
    if ('result' in next) return next;
    const { respond, ...pending } = next.asked;
    this.hold(flight.handling as { pauseAs: string }, { ...held, respond });
    return { pending };
  }

  /** Waits for `work` for at most the tool's timeout (then `abort`s it), or until the caller's signal. */
  private async bounded<T>(
    work: Promise<T>,
    abort: AbortController,
    name: string,
    options: McpCallOptions,
  ): Promise<T> {
    const timeout = new McpTimeoutError(
      `Executing tool ${name} timed out after ${(options.timeoutMs / 1000).toFixed(1)} seconds.`,
    );
    const timer = setTimeout(() => abort.abort(timeout), options.timeoutMs);
    const cancel = () => abort.abort(options.signal?.reason);
    options.signal?.addEventListener('abort', cancel);
    try {
      return await work;
    } catch (error) {
      if (abort.signal.reason === timeout || (isRequestTimeout(error) && !options.signal?.aborted))
        throw timeout;
      throw error;
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', cancel);
    }
  }

  /** Keeps a paused call until its answer, or until the SDK gives the call up (ELICITATION_HOLD_MS). */
  private hold({ pauseAs }: { pauseAs: string }, held: HeldCall): void {
    this.held.set(pauseAs, held);
    held.call.then(
      () => undefined,
      () => {
        if (this.held.get(pauseAs) !== held) return;
        this.held.delete(pauseAs);
        held.respond({ action: 'cancel' });
      },
    );
  }

  /** Closes the server's clients, its identities' too (its config changed, or it was deleted). */
  async drop(serverId: string): Promise<void> {
    const slots = [...this.entries.keys()].filter(
      (slot) => slot === serverId || slot.startsWith(`${serverId}/`),
    );
    await Promise.all(slots.map((slot) => this.dropSlot(slot)));
  }

  private async dropSlot(slot: string): Promise<void> {
    const entry = this.entries.get(slot);
    if (!entry) return;
    this.entries.delete(slot);
    await entry.client.then((client) => client.close()).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.untrack();
    await Promise.all([...this.entries.keys()].map((slot) => this.dropSlot(slot)));
  }

  /**
   * Runs `work` on the server's client; a failure other than a timeout or the caller's own abort
   * (`signal`: its run cancelled, its worker stopping) drops the client, whose other calls in flight,
   * other runs', must not fail with a cancelled one. A server that let a client connect without OAuth
   * and refuses a request (one that asks for a token past `initialize`) is connected to again with
   * OAuth, and `work` runs once more: the refused request did nothing.
   */
  private async using<T>(
    server: McpServerRef,
    work: (client: Client) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    const client = await this.client(server);
    try {
      return await work(client);
    } catch (error) {
      if (isAuthFailure(error) && this.withoutOauth.has(client)) {
        this.oauthAsked.add(slotOf(server));
        this.forget(slotOf(server), client);
        return this.using(server, work);
      }
      if (isAuthFailure(error)) throw new McpAuthError((error as Error).message);
      if (!(error instanceof McpTimeoutError) && !signal?.aborted) this.forget(slotOf(server), client);
      throw error;
    }
  }

  private async connect(server: McpServerRef): Promise<Client> {
    const slot = slotOf(server);
    const failed = this.failures.get(slot) ?? 0;
    if (failed) {
      const { reconnectInitialMs, reconnectMaxMs } = this.options;
      await sleep(Math.min(reconnectInitialMs * 2 ** (failed - 1), reconnectMaxMs));
    }
    try {
      const { timeouts, stdio, oauth } = this.options;
      const schemas: ToolSchemas = new Map();
      let oauthless = false;
      const client = await connectWithOauth(
        oauth,
        server,
        (authProvider) => {
          oauthless = !authProvider && !!oauth?.providerFor(server);
          return connectMcp(server.config, timeouts, stdio, {
            onToolsChanged: () => this.toolsChanged(server),
            schemas,
            authProvider,
          });
        },
        this.oauthAsked.has(slot),
      );
      if (oauthless) this.withoutOauth.add(client);
      this.schemas.set(client, schemas);
      routeElicitations(client);
      this.failures.delete(slot);
      // A server that exits or hangs up: the next call connects again instead of failing first.
      client.onclose = () => this.forget(slot, client);
      return client;
    } catch (error) {
      // A server refused to start is not one that failed to connect: no wait before the next answer.
      if (!(error instanceof McpStdioRefusedError)) this.failures.set(slot, failed + 1);
      mcpConnectionFailures.inc({ server: server.id });
      throw error;
    }
  }

  /** Drops the slot's entry if it holds this client (a newer one is left alone), and closes it. */
  private forget(slot: string, client: Client): void {
    if (this.entries.get(slot)?.connected === client) this.entries.delete(slot);
    void client.close().catch(() => undefined);
  }

  private toolsChanged(server: McpServerRef): void {
    const { onToolsChanged, log } = this.options;
    if (!onToolsChanged) return;
    this.listTools(server)
      .then((tools) => onToolsChanged(server.id, tools))
      .catch((error) =>
        log.warn({ server: server.id, error: (error as Error).message }, 'could not refresh MCP tools'),
      );
  }
}
