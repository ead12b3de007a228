import type { Queryable } from '../../db';
import { searchMessages } from '../../db/messages';
import type { MessageRole, MessageRow } from '../../db/rows';
import { contentText } from '../../memory/context';
import { ToolError } from '../../returns/tool-error';

/** RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE */
const DEFAULT_LIMIT = 5;
const ROLES = ['assistant', 'user', 'tool'];

function parseDate(value: unknown, field: string, endOfDay: boolean): Date | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const text = String(value);
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const date = new Date(dateOnly ? `${text}T${endOfDay ? '23:59:59.999' : '00:00:00'}Z` : text);
  if (Number.isNaN(date.getTime())) {
    throw new ToolError(
      `Invalid ${field} format: ${text}. Use ISO 8601 format (YYYY-MM-DD or YYYY-MM-DDTHH:MM)`,
    );
  }
  return date;
}

function timeAgo(date: Date, now: Date): string {
  const seconds = Math.floor((now.getTime() - date.getTime()) / 1000);
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86400)}d ago`;
}

/** Skipped as Letta skips them: tool results, and the searches themselves (no recursive nesting). */
const isNoise = (message: MessageRow) =>
  message.role === 'tool' ||
  (message.role === 'assistant' &&
    (message.tool_calls ?? []).some((call) => call.name === 'conversation_search'));

/**
 * Letta's conversation_search over PostgreSQL full-text search (no embeddings): the same arguments,
 * checks and result shape.
 */
export async function conversationSearch(
  db: Queryable,
  agent: { id: string },
  args: Record<string, unknown>,
): Promise<{ message: string; results: Record<string, unknown>[] }> {
  const roles = args.roles === undefined || args.roles === null ? undefined : args.roles;
  if (roles !== undefined && (!Array.isArray(roles) || roles.some((r) => !ROLES.includes(r)))) {
    throw new ToolError(`Invalid roles: ${JSON.stringify(roles)}. Use any of ${ROLES.join(', ')}`);
  }
  const limit = args.limit === undefined || args.limit === null ? DEFAULT_LIMIT : Number(args.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new ToolError(`Invalid limit: ${String(args.limit)}`);
  const found = await searchMessages(
    db,
    { agentId: agent.id },
    {
      query: typeof args.query === 'string' ? args.query : undefined,
      roles: roles as MessageRole[] | undefined,
      limit,
      startDate: parseDate(args.start_date, 'start_date', false),
      endDate: parseDate(args.end_date, 'end_date', true),
    },
  );
  const results = found.filter((m) => !isNoise(m));
  if (results.length === 0) return { message: 'No results found.', results: [] };
  const now = new Date();
  return {
    message: `Showing ${found.length} results:`,
    results: results.map((m) => ({
      timestamp: new Date(m.created_at).toISOString().replace('Z', '+00:00'),
      time_ago: timeAgo(new Date(m.created_at), now),
      role: m.role,
      content: contentText(m.content),
    })),
  };
}
