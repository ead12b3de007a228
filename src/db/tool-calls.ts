/**
 * What running one tool call reads, and its claim (src/db/tool-claims.ts) when it takes one: everything
 * in one statement, before the tool runs.
 */
import type { Queryable } from './database';
import type { AgentRow, MemoryBlock, SandboxConfigRow, SecretRow, ToolRow } from './rows';
import { decryptSecret } from '../secrets';
import type { ToolExecution } from './tool-executions';
import { mcpServerOf, type McpServerRow, type StoredMcpServer } from './mcp-servers';
import { elicitationOf, type McpElicitationRow } from './mcp-elicitations';
import { TAKE_CLAIM, type ClaimHolder } from './tool-claims';

export interface ToolCallKey {
  agentId: string;
  messageId: string;
  toolCallId: string;
  toolId: string;
  /** The version the turn resolved at its start (tool_versions); the current tool if it is gone. */
  toolVersion: number;
}

export interface ToolCallRead {
  /** The result an earlier attempt recorded: the call is not run again. */
  done?: ToolExecution;
  /** Whether this attempt holds the call's claim (always, when it takes none): only then may it run the tool. */
  claimed: boolean;
  /**
   * The attempt this one took the claim over from, when it did: that attempt started the call and
   * never recorded it (its worker died, or it was cut short at a shutdown), so the tool may have run.
   */
  takenFrom?: string;
  agent?: AgentRow;
  tool?: ToolRow;
  /**
   * The arguments as JSON text: the approver's edit when there is one, else the model's as it sent
   * them; undefined when the call is not in its message.
   */
  arguments?: string;
  /** Whether the arguments are an approver's edit, which the model is told of. */
  edited: boolean;
  /** An MCP tool's server, if it is still registered. */
  mcpServer?: McpServerRow;
  /** What the call's MCP server asked when it paused the call, with the answer once there is one. */
  elicitation?: McpElicitationRow;
  /** The agent's blocks in their order, when asked for: a memory edit's (under its lock), a sandboxed call's. */
  blocks?: MemoryBlock[];
  /** A sandboxed call's: the agent's secrets and every sandbox config with its variables, decrypted. */
  sandbox?: SandboxContext;
}

export interface SandboxContext {
  secrets: Pick<SecretRow, 'key' | 'value'>[];
  configs: { config: SandboxConfigRow; env: Record<string, string> }[];
}

/** What the statement gives of a sandbox context: JSON, so dates as text and values as stored. */
interface StoredSandboxContext {
  secrets: Pick<SecretRow, 'key' | 'value'>[];
  configs: {
    config: SandboxConfigRow & { created_at: string; updated_at: string };
    vars: Pick<SecretRow, 'key' | 'value'>[];
  }[];
}

function sandboxContextOf(stored: StoredSandboxContext): SandboxContext {
  return {
    secrets: stored.secrets.map(({ key, value }) => ({ key, value: decryptSecret(value) })),
    configs: stored.configs.map(({ config, vars }) => ({
      config: { ...config, created_at: new Date(config.created_at), updated_at: new Date(config.updated_at) },
      env: Object.fromEntries(vars.map(({ key, value }) => [key, decryptSecret(value)])),
    })),
  };
}

type Row = Partial<AgentRow> & {
  call_done: ToolExecution | null;
  call_claimed: boolean;
  call_taken_from: string | null;
  call_tool: ToolRow | null;
  call_arguments: string | null;
  call_edited: string | null;
  call_mcp_server: StoredMcpServer | null;
  call_elicitation: McpElicitationRow | null;
  call_blocks: MemoryBlock[] | null;
  call_sandbox: StoredSandboxContext | null;
};

/** The agent's blocks in their order, as JSON. */
const BLOCKS = `(SELECT coalesce(json_agg(json_build_object('id', b.id, 'label', b.label,
    'value', b.value, 'char_limit', b.char_limit, 'description', b.description,
    'read_only', b.read_only) ORDER BY ab.position, b.created_at), '[]')
  FROM blocks b JOIN agent_blocks ab ON ab.block_id = b.id WHERE ab.agent_id = $2)`;

/** The agent's secrets and every sandbox config with its variables, as JSON. */
const SANDBOX = `json_build_object(
  'secrets', (SELECT coalesce(json_agg(json_build_object('key', s.key, 'value', s.value) ORDER BY s.key), '[]')
    FROM agent_secrets s WHERE s.agent_id = $2),
  'configs', (SELECT coalesce(json_agg(json_build_object('config', to_jsonb(c),
      'vars', (SELECT coalesce(json_agg(json_build_object('key', v.key, 'value', v.value)
        ORDER BY v.created_at, v.id), '[]') FROM sandbox_env_vars v WHERE v.sandbox_config_id = c.id))), '[]')
    FROM sandbox_configs c))`;

/**
 * The statement for what a call reads. One text per choice of parts, not parameters that switch parts
 * off: PostgreSQL would cost a generic plan with every part in it and so plan the statement again at
 * every call; a text per choice keeps one plan per connection.
 */
const readStatement = (
  claim: boolean,
  blocks: boolean,
  sandbox: boolean,
) => `${claim ? `WITH claim AS (${TAKE_CLAIM})` : ''}
   SELECT a.*,
     (SELECT to_jsonb(e) FROM tool_executions e WHERE e.tool_call_id = $1) AS call_done,
     ${claim ? 'EXISTS (SELECT 1 FROM claim)' : 'true'} AS call_claimed,
     ${claim ? '(SELECT taken_from FROM claim)' : 'NULL'} AS call_taken_from,
     t.tool AS call_tool,
     (SELECT c->>'arguments' FROM messages m CROSS JOIN jsonb_array_elements(m.tool_calls) c
       WHERE m.id = $5 AND c->>'id' = $1) AS call_arguments,
     (SELECT edited_arguments FROM approval_calls
       WHERE tool_call_id = $1 AND request_message_id = $5 AND decision = 'approved') AS call_edited,
     (SELECT to_jsonb(s) FROM mcp_servers s
       WHERE s.id = t.tool->'metadata'->'mcp'->>'server_id') AS call_mcp_server,
     (SELECT to_json(e) FROM mcp_elicitations e WHERE e.tool_call_id = $1) AS call_elicitation,
     ${blocks ? BLOCKS : 'NULL'} AS call_blocks,
     ${sandbox ? SANDBOX : 'NULL'} AS call_sandbox
   FROM (SELECT 1) one LEFT JOIN agents a ON a.id = $2
   CROSS JOIN LATERAL (SELECT coalesce(
     (SELECT v.tool FROM tool_versions v WHERE v.tool_id = $3 AND v.version = $4),
     (SELECT to_json(t) FROM tools t WHERE t.id = $3)) AS tool) t`;

/**
 * For a call that takes a claim and one that takes none: the call alone; with the agent's blocks; with
 * those and its sandbox context (which needs them).
 */
const readsOf = (claim: boolean) => ({
  call: readStatement(claim, false, false),
  withBlocks: readStatement(claim, true, false),
  withSandbox: readStatement(claim, true, true),
});
const READS = { claiming: readsOf(true), unclaimed: readsOf(false) };

/**
 * Takes the call's claim for `holder` (none without one), and reads the call's recorded result, its
 * agent, its tool at the turn's version, its arguments and MCP server; with `blocks` the agent's
 * blocks, with `sandbox` those and its sandbox context.
 */
export async function readToolCall(
  db: Queryable,
  key: ToolCallKey,
  holder: ClaimHolder | undefined,
  { blocks = false, sandbox = false } = {},
): Promise<ToolCallRead> {
  const reads = holder ? READS.claiming : READS.unclaimed;
  const statement = sandbox ? reads.withSandbox : blocks ? reads.withBlocks : reads.call;
  const params = [key.toolCallId, key.agentId, key.toolId, key.toolVersion, key.messageId];
  const [row] = await db.query<Row>(statement, holder ? [...params, holder.owner, holder.leaseMs] : params);
  const {
    call_done,
    call_claimed,
    call_taken_from,
    call_tool,
    call_arguments,
    call_edited,
    call_mcp_server,
    call_elicitation,
    call_blocks,
    call_sandbox,
    ...agent
  } = row;
  return {
    done: call_done ?? undefined,
    claimed: call_claimed,
    takenFrom: call_taken_from ?? undefined,
    agent: agent.id ? (agent as AgentRow) : undefined,
    tool: call_tool ?? undefined,
    arguments: call_arguments === null ? undefined : (call_edited ?? call_arguments),
    edited: call_arguments !== null && call_edited !== null,
    mcpServer: call_mcp_server ? mcpServerOf(call_mcp_server) : undefined,
    elicitation: call_elicitation ? elicitationOf(call_elicitation) : undefined,
    blocks: call_blocks ?? undefined,
    sandbox: call_sandbox ? sandboxContextOf(call_sandbox) : undefined,
  };
}
