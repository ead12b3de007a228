/** What a request of an agent turn works with: the agent's tools and rules as they are when it starts. */
import { agentTools } from '../db/agents';
import type { Queryable } from '../db';
import type { AgentRow, ToolRow } from '../db/rows';
import { builtinMode, runsLocally } from '../tools/builtin';
import { mcpToolTimeoutMs, toolTimeoutMs } from '../tools/tool-timeout';
import { mcpToolTimeouts } from '../db/mcp-servers';
import { mcpServerIdOf } from '../mcp/tool-sync';
import type { TurnContext, ToolMode } from '../../contracts/payloads';
import { requestPart, storeRequestPart } from '../db/request-parts';
import { invalid } from '../errors';

/** Letta's executor selection by tool type (tool_execution_manager.py). */
export function toolMode(tool: Pick<ToolRow, 'tool_type' | 'name'>): ToolMode {
  switch (tool.tool_type) {
    case 'letta_core':
    case 'letta_memory_core':
    case 'letta_sleeptime_core':
    case 'letta_builtin':
    case 'letta_multi_agent_core':
    case 'letta_files_core':
      return builtinMode(tool.name);
    case 'external_mcp':
      return 'mcp';
    default:
      return 'sandbox';
  }
}

/** A tool's own timeout; an MCP tool's, else its server's (the call's activity is timed by it). */
async function timeoutsOf(db: Queryable, tools: ToolRow[]): Promise<(tool: ToolRow) => number | undefined> {
  const serverIds = tools.flatMap((tool) => (toolMode(tool) === 'mcp' ? (mcpServerIdOf(tool) ?? []) : []));
  const servers = await mcpToolTimeouts(db, [...new Set(serverIds)]);
  return (tool) => {
    const serverId = toolMode(tool) === 'mcp' && mcpServerIdOf(tool);
    if (!serverId) return toolTimeoutMs(tool);
    return mcpToolTimeoutMs(tool, { tool_timeout_seconds: servers.get(serverId) });
  };
}

export async function resolveTurnContext(db: Queryable, agent: AgentRow): Promise<TurnContext> {
  const tools = await agentTools(db, agent.id);
  const timeoutOf = await timeoutsOf(db, tools);
  const onlyApprovalRules = agent.tool_rules.every((rule) => rule.type === 'requires_approval');
  return {
    tools: tools.map((tool) => {
      const mode = toolMode(tool);
      return {
        id: tool.id,
        name: tool.name,
        mode,
        parallel: tool.enable_parallel_execution,
        version: tool.version,
        timeoutMs: timeoutOf(tool),
        local: mode === 'builtin' && runsLocally(tool.name),
      };
    }),
    toolRules: agent.tool_rules,
    parallelToolCalls: Boolean(agent.llm_config.parallel_tool_calls) && onlyApprovalRules,
    model: agent.model ?? `${agent.llm_config.model_endpoint_type}/${agent.llm_config.model}`,
  };
}

/**
 * The agent's tools and rules for a request, stored as a request part (src/db/request-parts.ts) under
 * the digest the turn and its signals carry. A turn carries them in its input, continues as new with
 * them, and loads them in one activity result, each a payload Temporal refuses past 2 MB: an agent whose
 * tools and rules come to more than `maxBytes` as JSON is refused here (400), before anything is
 * stored, instead of failing the turn.
 */
export async function storedTurnContext(
  tx: Queryable,
  agent: AgentRow,
  maxBytes: number,
): Promise<{ context: TurnContext; digest: string }> {
  const context = await resolveTurnContext(tx, agent);
  const bytes = Buffer.byteLength(requestPart(context).body);
  if (bytes > maxBytes)
    throw invalid(
      `The agent's tools and tool rules come to ${bytes} bytes as a turn carries them, more than TURN_CONTEXT_MAX_BYTES (${maxBytes}): detach tools or shorten tool rules`,
    );
  return { context, digest: await storeRequestPart(tx, context) };
}
