/**
 * Letta's fetch_webpage without Exa: a plain HTTP GET whose HTML is turned into readable text, as
 * Letta's fallback path (trafilatura / html2text) does. Error texts follow Letta's executor.
 */
import { convert } from 'html-to-text';
import { ToolError } from '../tool-error';

export interface FetchWebpageLimits {
  timeoutMs: number;
  maxBytes: number;
}

const HEADERS = {
  'user-agent': 'Mozilla/5.0 (compatible; letta-temporal fetch_webpage)',
  accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.8',
};

const HEADING = { uppercase: false };
const TEXT_OPTIONS = {
  wordwrap: false as const,
  selectors: [
    { selector: 'img', format: 'skip' },
    { selector: 'script', format: 'skip' },
    { selector: 'style', format: 'skip' },
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: HEADING })),
  ],
};

function parseUrl(value: unknown): URL {
  if (typeof value !== 'string') throw new ToolError("missing or invalid argument 'url' (expected a string)");
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ToolError(`Error fetching webpage: invalid URL ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ToolError(
      `Error fetching webpage: only http and https URLs can be fetched, not ${url.protocol}`,
    );
  }
  return url;
}

/** Reads at most `maxBytes` of the body, so a huge page cannot exhaust the worker's memory. */
async function readCapped(response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    chunks.push(chunk.subarray(0, maxBytes - size));
    size += chunk.length;
    if (size >= maxBytes) break;
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

export async function fetchWebpage(
  args: Record<string, unknown>,
  limits: FetchWebpageLimits,
  signal?: AbortSignal,
): Promise<string> {
  const url = parseUrl(args.url);
  const deadline = AbortSignal.timeout(limits.timeoutMs);
  let response: Response;
  let body: string;
  try {
    response = await fetch(url, {
      headers: HEADERS,
      redirect: 'follow',
      signal: signal ? AbortSignal.any([deadline, signal]) : deadline,
    });
    if (!response.ok) throw new ToolError(`HTTP error ${response.status}: ${response.statusText}`);
    body = await readCapped(response, limits.maxBytes);
  } catch (error) {
    if (error instanceof ToolError) throw error;
    const cause = (error as Error & { cause?: Error }).cause;
    throw new ToolError(`Request failed: ${cause?.message ?? (error as Error).message}`);
  }
  const type = response.headers.get('content-type') ?? '';
  return /html|xml/i.test(type) ? convert(body, TEXT_OPTIONS).trim() : body;
}
