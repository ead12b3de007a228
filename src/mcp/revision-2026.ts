/**
 * MCP's 2026-07-28 revision (the spec's "modern" era) on streamable HTTP, as far as the SDK's 1.x
 * building blocks do not speak it: there is no `initialize` handshake; every request and notification
 * carries the protocol version, this client's info and its capabilities in `_meta` (SEP-2575), the
 * version also in the MCP-Protocol-Version header; a refused request is a 4xx whose body is the
 * JSON-RPC error. A server's era is found as the revision's backward-compatibility section says:
 * `server/discover` first; a result offering this revision, or an UnsupportedProtocolVersion error
 * naming it (asked again once), is a modern server, anything else a legacy one, which gets the
 * `initialize` of 2025-11-25 (connection.ts). A refusal of the credentials is no era evidence: the
 * transport's OAuth runs first, and what it cannot settle is thrown.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Protocol } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type {
  FetchLike,
  Transport,
  TransportSendOptions,
} from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  McpError,
  ServerCapabilitiesSchema,
  type Implementation,
  type JSONRPCMessage,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/** The UnsupportedProtocolVersion error: its `data.supported` lists what the server speaks. */
const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/**
 * What this client declares: form elicitation, answered through input-required results
 * (input-required.ts); no sampling or roots.
 */
export const MODERN_CAPABILITIES = { elicitation: { form: {} } };

const DiscoverResultSchema = z.looseObject({
  supportedVersions: z.array(z.string()),
  capabilities: ServerCapabilitiesSchema.optional(),
  instructions: z.string().optional(),
});

/** The message with the revision's `_meta` keys, for a request or notification (responses have none). */
function withRequestMeta(message: JSONRPCMessage, clientInfo: Implementation): JSONRPCMessage {
  if (!('method' in message)) return message;
  const params = (message.params ?? {}) as { _meta?: Record<string, unknown> };
  const meta = {
    ...params._meta,
    'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL_VERSION,
    'io.modelcontextprotocol/clientInfo': clientInfo,
    'io.modelcontextprotocol/clientCapabilities': MODERN_CAPABILITIES,
  };
  return { ...message, params: { ...params, _meta: meta } } as JSONRPCMessage;
}

/** The SDK's streamable HTTP transport, every message sent with the revision's `_meta`. */
export class ModernHttpTransport extends StreamableHTTPClientTransport {
  constructor(
    url: URL,
    options: ConstructorParameters<typeof StreamableHTTPClientTransport>[1],
    private readonly clientInfo: Implementation,
  ) {
    super(url, options);
    this.setProtocolVersion(MODERN_PROTOCOL_VERSION);
  }

  override send(message: JSONRPCMessage | JSONRPCMessage[], options?: TransportSendOptions): Promise<void> {
    const stamped = Array.isArray(message)
      ? message.map((one) => withRequestMeta(one, this.clientInfo))
      : withRequestMeta(message, this.clientInfo);
    return super.send(stamped, options);
  }
}

/** A JSON-RPC error for a request, as a refusing modern server writes its 4xx body. */
function isRequestError(text: string): boolean {
  try {
    const body = JSON.parse(text) as { jsonrpc?: unknown; id?: unknown; error?: unknown };
    return body.jsonrpc === '2.0' && body.id !== undefined && body.id !== null && !!body.error;
  } catch {
    return false;
  }
}

/**
 * A fetch that gives a 4xx carrying a request's JSON-RPC error to the SDK as an answer (a 200), so
 * the request fails with that McpError and its code and data; 401 and 403 stay the OAuth's.
 */
export function refusalsAsAnswers(base: FetchLike): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    const { status } = response;
    if (status < 400 || status >= 500 || status === 401 || status === 403) return response;
    const text = await response.text();
    const headers = { 'content-type': 'application/json' };
    return isRequestError(text) ? new Response(text, { status: 200, headers }) : new Response(text, response);
  };
}

/** A client of the revision: connected without `initialize`, the server's capabilities from discovery. */
export class ModernClient extends Client {
  private discovered?: z.infer<typeof DiscoverResultSchema>;

  override async connect(transport: Transport): Promise<void> {
    await Protocol.prototype.connect.call(this, transport);
  }

  override getServerCapabilities(): ServerCapabilities | undefined {
    return this.discovered?.capabilities;
  }

  override getInstructions(): string | undefined {
    return this.discovered?.instructions;
  }

  /**
   * Asks the server what it speaks: whether it speaks this revision. An UnsupportedProtocolVersion
   * error that names this revision gets the question again once, as the spec asks; a refusal of the
   * credentials, a timeout or a server failure (5xx) is thrown, every other answer is a legacy server.
   */
  async discover(): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.request({ method: 'server/discover', params: {} }, DiscoverResultSchema);
        this.discovered = result;
        return result.supportedVersions.includes(MODERN_PROTOCOL_VERSION);
      } catch (error) {
        if (attempt === 1 && offersThisRevision(error)) continue;
        if (!isEraEvidence(error)) throw error;
        return false;
      }
    }
  }
}

function offersThisRevision(error: unknown): boolean {
  if (!(error instanceof McpError) || error.code !== UNSUPPORTED_PROTOCOL_VERSION) return false;
  const supported = (error.data as { supported?: unknown } | undefined)?.supported;
  return Array.isArray(supported) && supported.includes(MODERN_PROTOCOL_VERSION);
}

/** Whether a failed discovery says something of the server's era (else it is thrown). */
function isEraEvidence(error: unknown): boolean {
  if (error instanceof UnauthorizedError) return false;
  if (error instanceof McpError) return error.code !== ErrorCode.RequestTimeout;
  if (error instanceof StreamableHTTPError) {
    const status = error.code ?? 0;
    return status !== 401 && status !== 403 && status < 500;
  }
  return false;
}

export const isModernClient = (client: Client): client is ModernClient => client instanceof ModernClient;
