import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server that speaks the part of Exa's HTTP API (`POST /search`, `POST /contents`) that the
 * real, unmodified `exa-js` SDK uses, answering from a corpus the test supplies. Exa's cloud is out of
 * reach in tests, and a hand-rolled fake of the SDK would not catch a wrong request or response shape.
 *
 * Point the SDK at it with `new Exa(apiKey, server.baseURL)`: the SDK posts to `baseURL + '/search'`.
 */
export interface ExaPage {
  url: string;
  title: string;
  text: string;
  publishedDate?: string;
  author?: string;
}

/** Contents options: nested under `contents` for `/search`, at the top level for `/contents`. */
export interface ExaContentsOptions {
  text?: boolean | { maxCharacters?: number; includeHtmlTags?: boolean };
  highlights?:
    boolean | { query?: string; maxCharacters?: number; numSentences?: number; highlightsPerUrl?: number };
  summary?: boolean | { query?: string; schema?: Record<string, unknown> };
  [option: string]: unknown;
}

/** A request body as the SDK sends it (camelCase); one shape for both endpoints. */
export interface ExaRequestBody extends ExaContentsOptions {
  query?: string;
  type?: string;
  category?: string;
  numResults?: number;
  includeDomains?: string[];
  excludeDomains?: string[];
  startPublishedDate?: string;
  endPublishedDate?: string;
  includeText?: string[];
  excludeText?: string[];
  userLocation?: string;
  contents?: ExaContentsOptions;
  urls?: string[];
}

export interface ExaRecordedRequest {
  path: string;
  /** Lower-cased names, as Node reports them (`x-api-key`, `user-agent`, …). */
  headers: Record<string, string>;
  body: ExaRequestBody;
}

export interface ExaServer {
  baseURL: string;
  /** Every request, in arrival order, rejected ones (a wrong key, an unknown path) included. */
  requests: ExaRecordedRequest[];
  close(): Promise<void>;
}

export interface ExaServerOptions {
  pages: ExaPage[];
  apiKey?: string;
}

interface Reply {
  status: number;
  body: unknown;
}

const DEFAULT_NUM_RESULTS = 10;
const DEFAULT_HIGHLIGHTS = 3;
// Roughly Exa's list prices, so code that reports or budgets `costDollars` sees plausible numbers.
const PRICE = { search: 0.005, text: 0.001, highlights: 0.001, summary: 0.001 };

const requestId = () => randomBytes(16).toString('hex');

/** Exa's error body: `requestId`, a message in `error`, a machine-readable `tag`. */
const exaError = (status: number, tag: string, message: string): Reply => ({
  status,
  body: { requestId: requestId(), error: message, tag },
});

const words = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/** How often the query's words occur in `text`: the whole relevance model. */
function hits(text: string, terms: Set<string>): number {
  return words(text).filter((word) => terms.has(word)).length;
}

const sentences = (text: string) =>
  text
    .split(/(?<=[.!?])\s+/)
    .map((sentence) => sentence.trim())
    .filter(Boolean);

const clip = (text: string, max?: number) => (max === undefined ? text : text.slice(0, max));

/** `true` or an options object asks for a kind of content; `false` or absence does not. */
const wants = (option: unknown) => option !== undefined && option !== false && option !== null;

const optionsOf = <T extends object>(option: boolean | T | undefined): Partial<T> =>
  typeof option === 'object' ? option : {};

/** `example.com` matches it and its subdomains; `example.com/blog` also needs the path prefix. */
function matchesDomain(url: URL, domain: string): boolean {
  const [host, ...path] = domain
    .replace(/^https?:\/\//, '')
    .replace(/^www\./, '')
    .split('/');
  const pageHost = url.hostname.replace(/^www\./, '');
  const hostMatches = pageHost === host || pageHost.endsWith(`.${host}`);
  return hostMatches && url.pathname.slice(1).startsWith(path.join('/'));
}

function inDateRange(page: ExaPage, body: ExaRequestBody): boolean {
  if (!body.startPublishedDate && !body.endPublishedDate) return true;
  // Exa cannot place an undated page in a range, so a date filter leaves it out.
  if (!page.publishedDate) return false;
  const published = Date.parse(page.publishedDate);
  if (body.startPublishedDate && published < Date.parse(body.startPublishedDate)) return false;
  return !(body.endPublishedDate && published > Date.parse(body.endPublishedDate));
}

function passesFilters(page: ExaPage, body: ExaRequestBody): boolean {
  const url = new URL(page.url);
  const text = page.text.toLowerCase();
  if (body.includeDomains?.length && !body.includeDomains.some((d) => matchesDomain(url, d))) return false;
  if (body.excludeDomains?.some((d) => matchesDomain(url, d))) return false;
  if (body.includeText?.some((phrase) => !text.includes(phrase.toLowerCase()))) return false;
  if (body.excludeText?.some((phrase) => text.includes(phrase.toLowerCase()))) return false;
  return inDateRange(page, body);
}

/**
 * The sentences that mention the query most, one highlight each, scored relative to the best; a page
 * that never mentions it (reached through /contents) gets its opening sentence, as a preview.
 */
function highlightsOf(page: ExaPage, option: ExaContentsOptions['highlights'], query?: string) {
  const options = optionsOf(option);
  const terms = new Set(words(options.query ?? query ?? page.title));
  const scored = sentences(page.text).map((sentence) => ({ sentence, hits: hits(sentence, terms) }));
  const matching = scored.filter((s) => s.hits > 0).sort((a, b) => b.hits - a.hits);
  const limit = options.highlightsPerUrl ?? DEFAULT_HIGHLIGHTS;
  const best = (matching.length ? matching : scored.slice(0, 1)).slice(0, limit);
  const top = Math.max(1, best[0]?.hits ?? 0);
  return {
    highlights: best.map(({ sentence }) => clip(sentence, options.maxCharacters)),
    highlightScores: best.map(({ hits }) => hits / top),
  };
}

/** No model runs here: the summary is the page's first sentence, which tests can predict. */
const summaryOf = (page: ExaPage) => sentences(page.text)[0] ?? page.title;

function contentsOf(page: ExaPage, options: ExaContentsOptions, query?: string) {
  return {
    ...(wants(options.text) ? { text: clip(page.text, optionsOf(options.text).maxCharacters) } : {}),
    ...(wants(options.highlights) ? highlightsOf(page, options.highlights, query) : {}),
    ...(wants(options.summary) ? { summary: summaryOf(page) } : {}),
  };
}

const resultOf = (page: ExaPage) => ({
  id: page.url,
  url: page.url,
  title: page.title,
  ...(page.publishedDate ? { publishedDate: page.publishedDate } : {}),
  ...(page.author ? { author: page.author } : {}),
});

function costDollars(options: ExaContentsOptions, pages: number, search: boolean) {
  const kinds = (['text', 'highlights', 'summary'] as const).filter((kind) => wants(options[kind]));
  const contents = Object.fromEntries(kinds.map((kind) => [kind, PRICE[kind] * pages]));
  const total = (search ? PRICE.search : 0) + Object.values(contents).reduce((sum, cost) => sum + cost, 0);
  return {
    total: Math.round(total * 1e6) / 1e6,
    ...(search ? { search: { neural: PRICE.search } } : {}),
    ...(kinds.length ? { contents } : {}),
  };
}

function rank(pages: ExaPage[], body: ExaRequestBody, query: string) {
  const terms = new Set(words(query));
  return pages
    .filter((page) => passesFilters(page, body))
    .map((page) => ({ page, hits: hits(`${page.title} ${page.text}`, terms) }))
    .filter((match) => match.hits > 0)
    .sort((a, b) => b.hits - a.hits)
    .slice(0, body.numResults ?? DEFAULT_NUM_RESULTS);
}

function search(pages: ExaPage[], body: ExaRequestBody): Reply {
  const query = body.query;
  if (typeof query !== 'string' || !query.trim()) {
    return exaError(400, 'INVALID_REQUEST_BODY', 'query: Required');
  }
  const ranked = rank(pages, body, query);
  const top = ranked[0]?.hits ?? 1;
  // Exa returns contents only when `contents` asks for them (the SDK's search() asks for text by default).
  const contents = body.contents ?? {};
  const results = ranked.map(({ page, hits }) => ({
    ...resultOf(page),
    score: hits / top,
    ...contentsOf(page, contents, query),
  }));
  return {
    status: 200,
    body: {
      requestId: requestId(),
      resolvedSearchType: body.type === 'keyword' ? 'keyword' : 'neural',
      results,
      searchTime: 1,
      costDollars: costDollars(contents, results.length, true),
    },
  };
}

/** Exact URL first; then ignoring a trailing slash, which Exa treats as the same page. */
function findPage(pages: ExaPage[], url: string): ExaPage | undefined {
  const bare = (u: string) => u.replace(/\/+$/, '');
  return pages.find((page) => page.url === url) ?? pages.find((page) => bare(page.url) === bare(url));
}

/** Per-URL outcome: Exa reports an unknown page here, with a 200 for the request as a whole. */
const statusOf = (url: string, page: ExaPage | undefined) =>
  page
    ? { id: url, status: 'success', source: 'cached' }
    : { id: url, status: 'error', source: 'crawled', error: { tag: 'CRAWL_NOT_FOUND', httpStatusCode: 404 } };

function contents(pages: ExaPage[], body: ExaRequestBody): Reply {
  const urls = body.urls;
  if (!Array.isArray(urls) || urls.length === 0) {
    return exaError(400, 'INVALID_REQUEST_BODY', 'urls: Must provide at least one URL');
  }
  // `getContents(urls)` with no options sends no content option at all, and callers expect the text.
  const asked = ['text', 'highlights', 'summary'].some((kind) => wants(body[kind]));
  const options: ExaContentsOptions = asked ? body : { ...body, text: true };
  const found = urls.map((url) => ({ url, page: findPage(pages, url) }));
  const results = found.flatMap(({ page }) =>
    page ? [{ ...resultOf(page), ...contentsOf(page, options) }] : [],
  );
  return {
    status: 200,
    body: {
      requestId: requestId(),
      results,
      statuses: found.map(({ url, page }) => statusOf(url, page)),
      costDollars: costDollars(options, results.length, false),
    },
  };
}

/** The SDK sends `x-api-key`; Exa also takes `Authorization: Bearer <key>`. */
function presentedKey(headers: Record<string, string>): string | undefined {
  return headers['x-api-key'] ?? headers.authorization?.replace(/^Bearer\s+/i, '');
}

function answer(pages: ExaPage[], apiKey: string, request: ExaRecordedRequest, method?: string): Reply {
  if (presentedKey(request.headers) !== apiKey) {
    return exaError(401, 'INVALID_API_KEY', 'Invalid API key');
  }
  if (method === 'POST' && request.path === '/search') return search(pages, request.body);
  if (method === 'POST' && request.path === '/contents') return contents(pages, request.body);
  return exaError(404, 'NOT_FOUND', `Cannot ${method} ${request.path}`);
}

function headersOf(req: http.IncomingMessage): Record<string, string> {
  return Object.fromEntries(
    Object.entries(req.headers).map(([name, value]) => [
      name,
      Array.isArray(value) ? value.join(', ') : (value ?? ''),
    ]),
  );
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  return raw;
}

/** `undefined` for a body that is not a JSON object, so the caller can answer 400. */
function parseBody(raw: string): ExaRequestBody | undefined {
  try {
    const body: unknown = raw ? JSON.parse(raw) : {};
    return body && typeof body === 'object' && !Array.isArray(body) ? (body as ExaRequestBody) : undefined;
  } catch {
    return undefined;
  }
}

function validatePages(pages: ExaPage[]) {
  // A bad corpus URL would otherwise surface later as a confusing 500 in the middle of a test.
  for (const page of pages) new URL(page.url);
}

export async function startExaServer({
  pages,
  apiKey = 'exa-test-key',
}: ExaServerOptions): Promise<ExaServer> {
  validatePages(pages);
  const requests: ExaRecordedRequest[] = [];
  const server = http.createServer(async (req, res) => {
    const raw = await readBody(req);
    const body = parseBody(raw);
    const request = { path: (req.url ?? '/').split('?')[0], headers: headersOf(req), body: body ?? {} };
    requests.push(request);
    const reply = body
      ? answer(pages, apiKey, request, req.method)
      : exaError(400, 'INVALID_REQUEST_BODY', 'Request body must be a JSON object');
    res.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
