/**
 * Letta's fetch_webpage; without Exa: a plain HTTP GET whose HTML is turned into readable text, as
 * Letta's fallback path (trafilatura / html2text) does. The model chooses the URL, so the GET goes
 * through safeFetch: no private addresses, bounded in time and size. Error texts follow Letta's executor.
 */
import { convert } from 'html-to-text';
import { OutboundRefused, safeFetch, type OutboundPolicy, type SafeResponse } from '../../net/safe-fetch';
import { ToolError } from '../../returns/tool-error';
import type Exa from 'exa-js';
import { bounded, type ExaSettings } from './exa';

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
  const scheme = url.protocol.slice(0, -1);
  if (scheme !== 'http' && scheme !== 'https')
    throw new ToolError(
      `Invalid URL scheme '${scheme}'. Only 'http' and 'https' URLs are supported. Local file paths (file://) and other protocols cannot be fetched.`,
    );
  return url;
}

/**
 * Letta's fetch_webpage: Exa's contents of the page when there is a key (JSON with its title, date,
 * author and text), else, or when Exa has nothing for it, the page itself.
 */
export async function fetchWebpageOrContents(
  args: Record<string, unknown>,
  web: { exa?: Exa; exaSettings: ExaSettings; policy: OutboundPolicy },
  signal?: AbortSignal,
): Promise<string> {
  const url = parseUrl(args.url);
  if (web.exa) {
    let found;
    try {
      found = await bounded(web.exa.getContents([url.href], { text: true }), web.exaSettings, signal);
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new ToolError(`Error fetching webpage: ${(error as Error).message}`);
    }
    const [page] = found.results;
    if (page) {
      const { title, publishedDate, author, text } = page;
      return JSON.stringify({ title, published_date: publishedDate ?? null, author: author ?? null, text });
    }
  }
  return fetchWebpage(args, web.policy, signal);
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
