/** Letta's web_search: Exa's search with its contents, formatted as Letta formats the results. */
import type Exa from 'exa-js';
import { ToolError } from '../../returns/tool-error';
import { bounded, NO_EXA_KEY, type ExaSettings } from './exa';

type Args = Record<string, unknown>;

const strings = (value: unknown): string[] | undefined =>
  Array.isArray(value) && value.length ? value.map(String) : undefined;
const text = (value: unknown): string | undefined => (typeof value === 'string' && value ? value : undefined);

/** Letta's search parameters: at most 100 results, Exa's `auto` search, the filters given. */
function searchOptions(query: string, args: Args) {
  const requested = Number(args.num_results ?? 10);
  const includeText = args.include_text === true;
  return {
    numResults: Math.min(Math.max(Number.isFinite(requested) ? Math.trunc(requested) : 10, 1), 100),
    type: 'auto' as const,
    category: text(args.category) as 'news' | undefined,
    includeDomains: strings(args.include_domains),
    excludeDomains: strings(args.exclude_domains),
    startPublishedDate: text(args.start_published_date),
    endPublishedDate: text(args.end_published_date),
    userLocation: text(args.user_location),
    contents: {
      ...(includeText ? { text: true as const } : {}),
      highlights: { numSentences: 2, highlightsPerUrl: 3, query },
      summary: { query: `Summarize the key information from this content related to: ${query}` },
    },
  };
}

interface ExaResult {
  title: string | null;
  url: string;
  publishedDate?: string;
  author?: string | null;
  text?: string;
  highlights?: string[];
  summary?: string;
}

function formatted(result: ExaResult, includeText: boolean) {
  return {
    title: result.title,
    url: result.url,
    published_date: result.publishedDate ?? null,
    author: result.author ?? null,
    ...(includeText && result.text ? { text: result.text } : {}),
    ...(result.highlights?.length ? { highlights: result.highlights } : {}),
    ...(result.summary ? { summary: result.summary } : {}),
  };
}

/**
 * Searches with Exa. As in Letta, an empty query and a failed search are results the model reads
 * (JSON with `error`); a missing key is the tool's failure.
 */
export async function webSearch(
  exa: Exa | undefined,
  settings: ExaSettings,
  args: Args,
  signal?: AbortSignal,
): Promise<string> {
  const query = typeof args.query === 'string' ? args.query : '';
  if (!query.trim()) return JSON.stringify({ error: 'Query cannot be empty', query });
  if (!exa) throw new ToolError(NO_EXA_KEY);
  try {
    const response = await bounded(exa.search(query, searchOptions(query, args)), settings, signal);
    const results = (response.results as ExaResult[]).map((r) => formatted(r, args.include_text === true));
    return JSON.stringify({ query, results }, null, 2);
  } catch (error) {
    if (signal?.aborted) throw error;
    return JSON.stringify({ query, error: `Search failed: ${(error as Error).message}` });
  }
}
