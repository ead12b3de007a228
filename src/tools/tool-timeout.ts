/**
 * A custom or MCP tool's own timeout: `metadata.timeout_seconds` (ours: Letta has only the server-wide
 * tool_sandbox_timeout). It bounds the tool's run and, with a margin, its activity's start-to-close
 * timeout; without it, an MCP server's `tool_timeout_seconds`, then TOOL_TIMEOUT_MS (MCP_CALL_TIMEOUT_MS
 * for MCP tools) applies.
 */
import { invalid } from '../errors';

export const TIMEOUT_KEY = 'timeout_seconds';

export function toolTimeoutMs(tool: { metadata?: Record<string, unknown> | null }): number | undefined {
  const seconds = tool.metadata?.[TIMEOUT_KEY];
  return typeof seconds === 'number' && seconds > 0 ? seconds * 1000 : undefined;
}

/** Refuses a `timeout_seconds` that is not a positive number (400), at creation and on update. */
export function checkToolTimeout(metadata: Record<string, unknown> | null | undefined): void {
  if (metadata?.[TIMEOUT_KEY] === undefined || toolTimeoutMs({ metadata }) !== undefined) return;
  throw invalid(`metadata.${TIMEOUT_KEY} must be a positive number of seconds`);
}

/** An MCP tool's timeout: its own, else its server's `tool_timeout_seconds`, if either sets one. */
export function mcpToolTimeoutMs(
  tool: { metadata?: Record<string, unknown> | null },
  server: { tool_timeout_seconds?: number | null } | undefined,
): number | undefined {
  const serverSeconds = server?.tool_timeout_seconds;
  return toolTimeoutMs(tool) ?? (serverSeconds ? serverSeconds * 1000 : undefined);
}
