/**
 * Letta's fetch_webpage without Exa: a plain HTTP GET whose HTML is turned into readable text, as
 * Letta's fallback path (trafilatura / html2text) does. The model chooses the URL, so the GET goes
 * through safeFetch: no private addresses, bounded in time and size. Error texts follow Letta's executor.
 */
import { convert } from 'html-to-text';
import { OutboundRefused, safeFetch, type OutboundPolicy, type SafeResponse } from '../../net/safe-fetch';
import { ToolError } from '../tool-error';

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
  try {
    return new URL(value);
  } catch {
    throw new ToolError(`Error fetching webpage: invalid URL ${JSON.stringify(value)}`);
  }
}

export async function fetchWebpage(
  args: Record<string, unknown>,
  policy: OutboundPolicy,
  signal?: AbortSignal,
): Promise<string> {
  const url = parseUrl(args.url);
  let page: SafeResponse;
  try {
    page = await safeFetch(url, { ...policy, headers: HEADERS, signal });
  } catch (error) {
    if (error instanceof OutboundRefused) throw new ToolError(`Error fetching webpage: ${error.message}`);
    throw new ToolError(`Request failed: ${(error as Error).message}`);
  }
  if (page.status < 200 || page.status > 299)
    throw new ToolError(`HTTP error ${page.status}: ${page.statusText}`);
  const body = new TextDecoder().decode(page.body);
  return /html|xml/i.test(page.headers['content-type'] ?? '') ? convert(body, TEXT_OPTIONS).trim() : body;
}
