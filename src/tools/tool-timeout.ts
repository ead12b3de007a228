/**
 * A custom tool's own timeout: `metadata.timeout_seconds` (ours: Letta has only the server-wide
 * tool_sandbox_timeout). It bounds the tool's run and, with a margin, its activity's start-to-close
 * timeout; without it, TOOL_TIMEOUT_MS applies.
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
