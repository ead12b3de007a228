/**
 * The HTTP headers the MCP draft (SEP-2243) asks of a client on every POST, so that gateways can route
 * and authorize without reading the body: `Mcp-Method`, `Mcp-Name` for the requests that name a tool,
 * resource or prompt, and `Mcp-Param-<Name>` for each tool argument the tool's input schema marks with
 * `x-mcp-header`. A tool whose marks are invalid is not taken at all (`paramHeaderProblem`).
 */

import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';

type Schema = Record<string, unknown>;

/** The argument types a header may carry: `number` is left out, as a float has no one text form. */
const HEADER_TYPES = new Set(['string', 'integer', 'boolean']);
/** An HTTP token (RFC 9110 tchar): visible ASCII without separators. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Each argument marked with `x-mcp-header`, with the header name it gives. */
function markedArguments(inputSchema: Schema | undefined): [string, unknown, Schema][] {
  const properties = (inputSchema?.properties ?? {}) as Record<string, Schema>;
  return Object.entries(properties)
    .filter(([, property]) => property && typeof property === 'object' && 'x-mcp-header' in property)
    .map(([name, property]) => [name, property['x-mcp-header'], property]);
}

/** Why the tool's `x-mcp-header` marks cannot be honoured, if they cannot. */
export function paramHeaderProblem(inputSchema: Schema | undefined): string | undefined {
  const seen = new Set<string>();
  for (const [name, header, property] of markedArguments(inputSchema)) {
    if (typeof header !== 'string' || !TOKEN.test(header))
      return `the x-mcp-header of '${name}' is not a valid header name`;
    if (!HEADER_TYPES.has(property.type as string))
      return `the x-mcp-header of '${name}' is on a ${String(property.type)}, not a string, integer or boolean`;
    if (seen.has(header.toLowerCase())) return `two arguments have the x-mcp-header '${header}'`;
    seen.add(header.toLowerCase());
  }
}

/** A header value as SEP-2243 writes it: Base64 between `=?base64?` and `?=` unless plain visible ASCII. */
function headerValue(value: string | number | boolean): string {
  const text = String(value);
  const plain = /^[\x20-\x7e]*$/.test(text) && text === text.trim();
  return plain ? text : `=?base64?${Buffer.from(text, 'utf8').toString('base64')}?=`;
}

function paramHeaders(
  inputSchema: Schema | undefined,
  args: Record<string, unknown>,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, header] of markedArguments(inputSchema)) {
    const value = args[name];
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      headers[`Mcp-Param-${header as string}`] = headerValue(value);
  }
  return headers;
}

/** The input schemas of the tools called on one connection, by name, as stored when they were synced. */
export type ToolSchemas = Map<string, Schema | undefined>;

interface JsonRpcRequest {
  method?: unknown;
  params?: { name?: unknown; uri?: unknown; arguments?: unknown };
}

/** The headers for one JSON-RPC message sent on its own. */
export function requestHeaders(message: JsonRpcRequest, schemas: ToolSchemas): Record<string, string> {
  if (typeof message.method !== 'string') return {};
  const headers: Record<string, string> = { 'Mcp-Method': message.method };
  const named = message.method === 'resources/read' ? message.params?.uri : message.params?.name;
  if (['tools/call', 'resources/read', 'prompts/get'].includes(message.method) && typeof named === 'string')
    headers['Mcp-Name'] = headerValue(named);
  if (message.method === 'tools/call' && typeof named === 'string') {
    const args = (message.params?.arguments ?? {}) as Record<string, unknown>;
    Object.assign(headers, paramHeaders(schemas.get(named), args));
  }
  return headers;
}

/** A fetch that adds the headers above to each POST of one JSON-RPC message. */
export function withRequestHeaders(schemas: ToolSchemas, base: FetchLike = fetch): FetchLike {
  return (url, init) => {
    if (init?.method !== 'POST' || typeof init.body !== 'string') return base(url, init);
    let message: JsonRpcRequest;
    try {
      message = JSON.parse(init.body) as JsonRpcRequest;
    } catch {
      return base(url, init);
    }
    const headers = new Headers(init.headers);
    for (const [name, value] of Object.entries(requestHeaders(message, schemas))) headers.set(name, value);
    return base(url, { ...init, headers });
  };
}
