/**
 * The server's GET of a URL that a model or a tool argument chose (or POST of a body to a webhook a
 * caller named). Every hop (the URL, then each
 * redirect's Location) is resolved first, each of its addresses judged by the address policy
 * (private-addresses.ts), and the connection made to exactly the addresses judged: a DNS answer that
 * changes between the check and the connection (DNS rebinding) cannot slip a private address in.
 * One deadline bounds the whole fetch, redirects included, and the body read is capped.
 */
import { lookup } from 'node:dns/promises';
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { addAbortSignal, pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import { refusal, withoutBrackets, type PrivateAllowList } from './private-addresses';

export interface OutboundPolicy {
  /** The whole fetch, from the first lookup to the last byte of the final answer. */
  timeoutMs: number;
  /** Of the final answer's (decoded) body; the rest is dropped. */
  maxBytes: number;
  maxRedirects: number;
  allow: PrivateAllowList;
}

/** A host name's addresses; the system resolver (as every other connection of the process uses). */
export type Resolver = (hostname: string) => Promise<string[]>;

export interface SafeFetchOptions extends OutboundPolicy {
  headers?: Record<string, string>;
  /** POSTed when given; a POST's redirect is its answer, never followed. */
  body?: string;
  signal?: AbortSignal;
  resolve?: Resolver;
  /** false: a redirect is the answer, not followed (a caller that follows them itself). */
  followRedirects?: boolean;
}

export interface SafeResponse {
  /** Where the answer came from, after redirects. */
  url: URL;
  status: number;
  statusText: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** The policy forbids the fetch: a private address, a scheme other than http(s), too many redirects. */
export class OutboundRefused extends Error {
  override name = 'OutboundRefused';
}

const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const DECODERS: Record<string, () => zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress> = {
  gzip: zlib.createGunzip,
  'x-gzip': zlib.createGunzip,
  deflate: zlib.createInflate,
  br: zlib.createBrotliDecompress,
};

export async function safeFetch(url: URL, options: SafeFetchOptions): Promise<SafeResponse> {
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
  try {
    for (let redirects = 0; ; redirects++) {
      const response = await send(url, await reachableAddresses(url, options, signal), options, signal);
      const location =
        options.body === undefined &&
        options.followRedirects !== false &&
        REDIRECTS.has(response.statusCode ?? 0) &&
        response.headers.location;
      if (!location) return await answer(url, response, options.maxBytes, signal);
      response.destroy();
      if (redirects === options.maxRedirects)
        throw new OutboundRefused(`more than ${options.maxRedirects} redirects`);
      url = redirectTarget(location, url);
    }
  } catch (error) {
    if (deadline.aborted) throw new Error(`no complete answer within ${options.timeoutMs} ms`);
    throw error;
  }
}

function redirectTarget(location: string, from: URL): URL {
  try {
    return new URL(location, from);
  } catch {
    throw new Error(`${from.href} redirected to an invalid URL: ${JSON.stringify(location)}`);
  }
}

/** The host's addresses, each allowed by the policy; an OutboundRefused if any is not. */
async function reachableAddresses(url: URL, options: SafeFetchOptions, signal: AbortSignal) {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new OutboundRefused(`only http and https URLs can be fetched, not ${url.protocol}`);
  const host = withoutBrackets(url.hostname);
  const addresses = isIP(host)
    ? [host]
    : await untilAborted((options.resolve ?? systemResolver)(host), signal);
  if (addresses.length === 0) throw new Error(`${host} has no address`);
  for (const address of addresses) {
    const reason = refusal(url.hostname, address, options.allow);
    if (reason) throw new OutboundRefused(reason);
  }
  return addresses.map((address) => ({ address, family: isIP(address) }));
}

/** The system resolver cannot be cancelled: stop waiting for it instead. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Connects to the addresses just judged, never to a second DNS answer. */
const pinnedLookup =
  (addresses: { address: string; family: number }[]): LookupFunction =>
  (_hostname, options, callback) =>
    options.all
      ? (callback as (error: null, all: typeof addresses) => void)(null, addresses)
      : callback(null, addresses[0].address, addresses[0].family);

function send(
  url: URL,
  addresses: { address: string; family: number }[],
  options: SafeFetchOptions,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const request = (url.protocol === 'https:' ? https : http).request({
    hostname: withoutBrackets(url.hostname),
    port: url.port || undefined,
    path: `${url.pathname}${url.search}`,
    method: options.body === undefined ? 'GET' : 'POST',
    headers: { ...options.headers, host: url.host, 'accept-encoding': 'gzip, deflate, br' },
    lookup: pinnedLookup(addresses),
    // A connection of its own, closed after: a pooled socket would outlive the judgement of its address.
    agent: false,
    signal,
  });
  return new Promise((resolve, reject) =>
    request.on('response', resolve).on('error', reject).end(options.body),
  );
}

async function answer(url: URL, response: IncomingMessage, maxBytes: number, signal: AbortSignal) {
  try {
    return {
      url,
      status: response.statusCode ?? 0,
      statusText: response.statusMessage ?? '',
      headers: response.headers,
      body: await readCapped(addAbortSignal(signal, decoded(response)), maxBytes),
    };
  } finally {
    response.destroy();
  }
}

function decoded(response: IncomingMessage): Readable {
  const decoder = DECODERS[(response.headers['content-encoding'] ?? '').trim().toLowerCase()];
  if (!decoder) return response;
  return pipeline(response, decoder(), () => undefined);
}

/** At most `maxBytes`, so a huge (or highly compressed) page cannot exhaust the worker's memory. */
async function readCapped(body: Readable, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(chunk.subarray(0, maxBytes - size));
    size += chunk.length;
    if (size >= maxBytes) break;
  }
  return Buffer.concat(chunks);
}
