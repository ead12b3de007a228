/** What a request of an agent turn works with: the agent's tools and rules as they are when it starts. */
import { agentTools } from '../db/agents';
import type { Queryable } from '../db';
import type { AgentRow, ToolRow } from '../db/rows';
import { builtinMode, runsLocally } from '../tools/builtin';
import { mcpToolTimeoutMs, toolTimeoutMs } from '../tools/tool-timeout';
import { mcpToolTimeouts } from '../db/mcp-servers';
import { MCP_TOOL_TYPE, mcpServerIdOf } from '../mcp/tool-sync';
import type { TurnContext } from '../../contracts/payloads';
import type { ServerToolMode, ToolMode } from '../../contracts/tool-modes';
import { requestPart, storeRequestPart } from '../db/request-parts';
import { conflict, invalid } from '../errors';

/**
 * Letta's executor selection by tool type (tool_execution_manager.py): the tool types this server
 * stores, each with the mode that runs its tools. Tool types enter by our code alone: `custom` from
 * `POST /v1/tools` and an agent file's custom tools, `external_mcp` from an MCP server's tools, the
 * built-ins' from src/tools/builtin (an agent file's other tools are matched to those by name).
 */
const MODE_OF_TOOL_TYPE = {
  letta_core: builtinMode,
  letta_memory_core: builtinMode,
  letta_sleeptime_core: builtinMode,
  letta_voice_sleeptime_core: builtinMode,
  letta_builtin: builtinMode,
  letta_multi_agent_core: builtinMode,
  letta_files_core: builtinMode,
  [MCP_TOOL_TYPE]: () => 'mcp' as const,
  custom: () => 'sandbox' as const,
} satisfies Record<string, (name: string) => ToolMode>;

export type ModesOfToolTypes = ReturnType<(typeof MODE_OF_TOOL_TYPE)[keyof typeof MODE_OF_TOOL_TYPE]>;
export type Covering<Modes, Every extends Modes> = Every;
/**
 * Every mode this server runs is some tool type's (a client mode's tools come with the request): a new
 * mode fails to compile here until a tool type selects it.
 */
export type ToolTypeModes = Covering<ModesOfToolTypes, ServerToolMode>;

const isKnownToolType = (type: string): type is keyof typeof MODE_OF_TOOL_TYPE =>
  Object.hasOwn(MODE_OF_TOOL_TYPE, type);

/**
 * The execution mode of a tool. A tool type no mode runs (one a database written by another version
 * holds) is refused where a turn starts (409), never run in a mode it was not written for.
 */
export function toolMode(tool: Pick<ToolRow, 'tool_type' | 'name'>): ToolMode {
  if (!isKnownToolType(tool.tool_type))
    throw conflict(
      `Tool '${tool.name}' is of type '${tool.tool_type}', which no execution mode of this server runs: detach it from the agent`,
    );
  return MODE_OF_TOOL_TYPE[tool.tool_type](tool.name);
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
