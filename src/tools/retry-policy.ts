/**
 * A tool's retry policy after an interrupted attempt: whether a call whose earlier attempt started and
 * never recorded its result (its worker died, or stopped past its grace) may run again. A tool that may
 * (idempotent: a second run with the same arguments has no further effect) runs again; any other is
 * answered that the earlier attempt may have taken effect, since running it twice could do twice what
 * it does (activities/tool-call.ts). In order of precedence:
 *
 * - the tool's own `metadata_.idempotent` (true or false), which its author or an operator sets;
 * - for an MCP tool, its server config's `tools_idempotent`, then the server's annotations of the tool
 *   (`idempotentHint` or `readOnlyHint`: hints of a server, which the two above overrule);
 * - for a built-in tool, its row in src/tools/builtin (the reads);
 * - otherwise not.
 */
import { invalid } from '../errors';
import type { ToolRow } from '../db/rows';
import type { McpServerConfig } from '../schemas/mcp-server';
import { MCP_TOOL_TYPE, mcpHintsOf } from '../mcp/tool-sync';
import { builtinIdempotent } from './builtin';

export const IDEMPOTENT_KEY = 'idempotent';

/** Whether a call of `tool` may run again after an interrupted attempt. */
export function runsAgainAfterInterruption(
  tool: Pick<ToolRow, 'name' | 'tool_type' | 'metadata'>,
  mcpServer?: { config: Pick<McpServerConfig, 'tools_idempotent'> },
): boolean {
  const own = tool.metadata?.[IDEMPOTENT_KEY];
  if (typeof own === 'boolean') return own;
  if (tool.tool_type === MCP_TOOL_TYPE) {
    const server = mcpServer?.config.tools_idempotent;
    if (typeof server === 'boolean') return server;
    const hints = mcpHintsOf(tool);
    return hints?.idempotent === true || hints?.read_only === true;
  }
  return tool.tool_type.startsWith('letta_') && builtinIdempotent(tool.name);
}

/** Refuses a `metadata_.idempotent` that is not true or false (400), at creation and on update. */
export function checkIdempotentFlag(metadata: Record<string, unknown> | null | undefined): void {
  const value = metadata?.[IDEMPOTENT_KEY];
  if (value === undefined || value === null || typeof value === 'boolean') return;
  throw invalid(`metadata.${IDEMPOTENT_KEY} must be true or false`);
}
