/**
 * Tool calls whose server asks the user something mid-call (`elicitation/create`). A call in flight
 * either has its answer at hand (a direct run says how to answer), or pauses: the call stays open in
 * this process, its elicitation's answer held back, and the caller learns what the server asked and
 * how to come back to the call should this process stop (its streamable HTTP session and the
 * resumption token before the request). The answer, given later, goes to the server on the same call.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  isJSONRPCRequest,
  type CallToolResult,
  type ElicitRequestFormParams,
  type ElicitResult,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { ElicitationSession, InputRetry } from '../db/mcp-elicitations';

/** How a call's elicitations are answered: at once, or by pausing under a key (the tool call's id). */
export type ElicitationHandling =
  { answer: (params: ElicitRequestFormParams) => ElicitResult } | { pauseAs: string };

/**
 * What a paused call's server asked, and how to take the call up again without this process: its
 * session (2025-11-25), or the retry its input-required result asks for (2026-07-28, input-required.ts).
 */
export interface PendingElicitation {
  params: ElicitRequestFormParams;
  session?: ElicitationSession;
  retry?: InputRetry;
}

export type McpCallOutcome = { result: CallToolResult } | { pending: PendingElicitation };

interface Asked extends PendingElicitation {
  respond: (result: ElicitResult) => void;
}

/** One tools/call on a client: the resumption tokens of its stream, and the elicitation it waits on. */
export class CallInFlight {
  readonly tokens: string[] = [];
  private asked!: Promise<Asked>;
  private ask!: (asked: Asked) => void;

  constructor(readonly handling: ElicitationHandling | undefined) {
    this.reset();
  }

  /** The next elicitation of this call. */
  next(): Promise<Asked> {
    return this.asked;
  }

  private reset(): void {
    this.asked = new Promise((resolve) => (this.ask = resolve));
  }

  /** The server asks: answered at once, or held until `answer` (a pause). */
  elicit(params: ElicitRequestFormParams, session: ElicitationSession | undefined): Promise<ElicitResult> {
    const { handling } = this;
    if (!handling) return Promise.resolve({ action: 'decline' });
    if ('answer' in handling) return Promise.resolve(handling.answer(params));
    return new Promise((respond) => {
      const ask = this.ask;
      this.reset();
      ask({ params, session, respond });
    });
  }
}

/** A paused call, kept open in this process until its elicitation is answered. */
export interface HeldCall {
  flight: CallInFlight;
  call: Promise<CallToolResult>;
  abort: AbortController;
  respond: (result: ElicitResult) => void;
}

interface ClientCalls {
  flights: Set<CallInFlight>;
  /** The call whose stream carried the latest event: an elicitation on a stream belongs to its call. */
  latest?: CallInFlight;
  /** The call each elicitation request came for, by its JSON-RPC id. */
  askers: Map<RequestId, CallInFlight>;
}

const callsOf = new WeakMap<Client, ClientCalls>();

/**
 * Sends each elicitation a client receives to the call it belongs to: on streamable HTTP, the call on
 * whose stream it came (the SDK gives each call's event ids to its `onresumptiontoken` just before its
 * messages); otherwise the one call in flight. One that belongs to no call, or to one of several calls
 * on a transport that does not tell them apart, is declined.
 */
export function routeElicitations(client: Client): void {
  const calls: ClientCalls = { flights: new Set(), askers: new Map() };
  callsOf.set(client, calls);
  const transport = client.transport!;
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (isJSONRPCRequest(message) && message.method === 'elicitation/create') {
      const owner = calls.flights.size === 1 ? [...calls.flights][0] : calls.latest;
      if (owner) calls.askers.set(message.id, owner);
    }
    deliver?.(message, extra);
  };
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    const owner = calls.askers.get(extra.requestId);
    calls.askers.delete(extra.requestId);
    if (!owner) return { action: 'decline' };
    const params = request.params as ElicitRequestFormParams;
    return owner.elicit(params, sessionOf(client, owner));
  });
}

/** Where a call can be taken up again: the session, and the last event before the elicitation. */
function sessionOf(client: Client, flight: CallInFlight): ElicitationSession | undefined {
  const transport = client.transport;
  if (!(transport instanceof StreamableHTTPClientTransport) || !transport.sessionId) return undefined;
  const resumptionToken = flight.tokens.at(-2);
  return resumptionToken ? { sessionId: transport.sessionId, resumptionToken } : undefined;
}

/** Starts tracking a call on `client`; `done` stops it. */
export function track(client: Client, flight: CallInFlight, done: Promise<unknown>): void {
  const calls = callsOf.get(client);
  if (!calls) return;
  calls.flights.add(flight);
  void done.catch(() => undefined).finally(() => calls.flights.delete(flight));
}

/** The call's stream carried an event: noted so that an elicitation on it finds its call. */
export function noteToken(client: Client, flight: CallInFlight, token: string): void {
  flight.tokens.push(token);
  if (flight.tokens.length > 2) flight.tokens.shift();
  const calls = callsOf.get(client);
  if (calls) calls.latest = flight;
}
