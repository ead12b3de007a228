/** What running one tool call reads: everything in one statement, before the tool runs. */
import type { Queryable } from './database';
import type { AgentRow, MemoryBlock, ToolRow } from './rows';
import type { ToolExecution } from './tool-executions';
import { mcpServerOf, type McpServerRow, type StoredMcpServer } from './mcp-servers';

export interface ToolCallKey {
  agentId: string;
  messageId: string;
  toolCallId: string;
  toolId: string;
  /** The version the step resolved at its start (tool_versions); the current tool if it is gone. */
  toolVersion: number;
}

export interface ToolCallRead {
  /** The result an earlier attempt recorded: the call is not run again. */
  done?: ToolExecution;
  agent?: AgentRow;
  tool?: ToolRow;
  /** The model's arguments as it sent them (JSON text); undefined when the call is not in its message. */
  arguments?: string;
  /** An MCP tool's server, if it is still registered. */
  mcpServer?: McpServerRow;
  /** The agent's blocks in their order, when asked for (a memory edit's, read under its lock). */
  blocks?: MemoryBlock[];
}

type Row = Partial<AgentRow> & {
  call_done: ToolExecution | null;
  call_tool: ToolRow | null;
  call_arguments: string | null;
  call_mcp_server: StoredMcpServer | null;
  call_blocks: MemoryBlock[] | null;
};

/**
 * The call's recorded result, its agent, its tool at the step's version, its arguments and MCP server,
 * and with `blocks` the agent's blocks.
 */
export async function readToolCall(
  db: Queryable,
  key: ToolCallKey,
  { blocks = false } = {},
): Promise<ToolCallRead> {
  const [row] = await db.query<Row>(
    `SELECT a.*,
       (SELECT to_jsonb(e) FROM tool_executions e WHERE e.tool_call_id = $1) AS call_done,
       t.tool AS call_tool,
       (SELECT c->>'arguments' FROM messages m CROSS JOIN jsonb_array_elements(m.tool_calls) c
         WHERE m.id = $5 AND c->>'id' = $1) AS call_arguments,
       (SELECT to_jsonb(s) FROM mcp_servers s
         WHERE s.id = t.tool->'metadata'->'mcp'->>'server_id') AS call_mcp_server,
       CASE WHEN $6 THEN (SELECT coalesce(json_agg(json_build_object('id', b.id, 'label', b.label,
           'value', b.value, 'char_limit', b.char_limit, 'read_only', b.read_only)
           ORDER BY ab.position, b.created_at), '[]')
         FROM blocks b JOIN agent_blocks ab ON ab.block_id = b.id WHERE ab.agent_id = $2) END AS call_blocks
     FROM (SELECT 1) one LEFT JOIN agents a ON a.id = $2
     CROSS JOIN LATERAL (SELECT coalesce(
       (SELECT v.tool FROM tool_versions v WHERE v.tool_id = $3 AND v.version = $4),
       (SELECT to_json(t) FROM tools t WHERE t.id = $3)) AS tool) t`,
    [key.toolCallId, key.agentId, key.toolId, key.toolVersion, key.messageId, blocks],
  );
  const { call_done, call_tool, call_arguments, call_mcp_server, call_blocks, ...agent } = row;
  return {
    done: call_done ?? undefined,
    agent: agent.id ? (agent as AgentRow) : undefined,
    tool: call_tool ?? undefined,
    arguments: call_arguments ?? undefined,
    mcpServer: call_mcp_server ? mcpServerOf(call_mcp_server) : undefined,
    blocks: call_blocks ?? undefined,
  };
}
