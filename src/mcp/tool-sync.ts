/**
 * A server's tools as stored tools (Letta's ToolCreate.from_mcp): `tool_type: external_mcp`, tagged
 * `mcp:<server>`, their metadata naming the server. Syncing makes the stored ones match what the server
 * lists: new tools added, changed ones updated (as a new version), gone ones deleted.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Database, Queryable } from '../db';
import { getMcpServer, recordMcpConnection, type McpServerRow } from '../db/mcp-servers';
import type { ToolRow } from '../db/rows';
import {
  deleteTool,
  getToolByName,
  insertTool,
  toolsOfMcpServer,
  updateTool,
  type ToolFields,
} from '../db/tools';
import { newId } from '../ids';
import { schemaHealth } from '../schemas/schema-health';
import { strictParameters } from '../schemas/strict-mode';
import { normalizeMcpSchema } from './normalize-schema';
import { paramHeaderProblem } from './request-headers';
import type { TaskSupport } from './tasks';
import type { McpClientPool, McpServerRef } from './client-pool';
import { DEFAULT_RETURN_CHAR_LIMIT } from '../returns/tool-returns';

export const MCP_TOOL_TYPE = 'external_mcp';
/** Letta's MAX_TOOL_NAME_LENGTH. */
const MAX_NAME_LENGTH = 48;

export interface McpToolMetadata {
  server_id: string;
  server_name: string;
  /**
   * The tool's name as its server lists it, which calls use. The stored name (the one models see) is
   * the same unless another tool had it when this one was first stored (`storedNameOf`).
   */
  tool_name?: string;
  /**
   * The tool's `inputSchema` as the server listed it, every keyword kept (`$schema`, `$defs`,
   * `$anchor`, …): `json_schema.parameters` is the form models get, derived from it.
   */
  input_schema: Record<string, unknown>;
  /** The tool's `outputSchema`, which its structured results are checked against. */
  output_schema?: Record<string, unknown>;
  /** The tool's `execution.taskSupport` when it may run as a task (src/mcp/tasks.ts). */
  task_support?: TaskSupport;
  /**
   * What the server's annotations hint of running the tool again: `readOnlyHint` (it changes
   * nothing), `idempotentHint` (a second call with the same arguments has no further effect). Hints
   * of the server, which its config's `tools_idempotent` or the tool's `metadata_.idempotent` overrule
   * (src/tools/retry-policy.ts).
   */
  hints?: { read_only?: true; idempotent?: true };
}

export interface SyncSummary {
  added: string[];
  updated: string[];
  deleted: string[];
  /** Tools the server lists that cannot become tools here, with why. */
  skipped: { name: string; reason: string }[];
}

export const mcpToolTag = (serverName: string) => `mcp:${serverName}`;

const mcpMetadataOf = (tool: Pick<ToolRow, 'metadata'>) => tool.metadata?.mcp as McpToolMetadata | undefined;

export const mcpServerIdOf = (tool: Pick<ToolRow, 'metadata'>) => mcpMetadataOf(tool)?.server_id;

export const mcpOutputSchemaOf = (tool: Pick<ToolRow, 'metadata'>) => mcpMetadataOf(tool)?.output_schema;

export const mcpInputSchemaOf = (tool: Pick<ToolRow, 'metadata'>) => mcpMetadataOf(tool)?.input_schema;
export const mcpTaskSupportOf = (tool: Pick<ToolRow, 'metadata'>) => mcpMetadataOf(tool)?.task_support;
export const mcpHintsOf = (tool: Pick<ToolRow, 'metadata'>) => mcpMetadataOf(tool)?.hints;
/** The name the tool's server knows it by. */
export const mcpToolNameOf = (tool: Pick<ToolRow, 'metadata' | 'name'>) =>
  mcpMetadataOf(tool)?.tool_name ?? tool.name;

/** The annotations that say whether a call may run again, as stored; none when they say nothing. */
function hintsOf(tool: Tool): McpToolMetadata['hints'] {
  const { readOnlyHint, idempotentHint } = tool.annotations ?? {};
  if (readOnlyHint !== true && idempotentHint !== true) return undefined;
  return {
    ...(readOnlyHint === true && { read_only: true }),
    ...(idempotentHint === true && { idempotent: true }),
  };
}

/** 'required' or 'optional'; 'forbidden', or none, is a plain call. */
function taskSupportOf(tool: Tool): TaskSupport | undefined {
  const support = tool.execution?.taskSupport;
  return support === 'required' || support === 'optional' ? support : undefined;
}

/** Letta's generate_tool_schema_for_mcp, without request_heartbeat (the v3 loop has none), named `name`. */
function schemaOf(tool: Tool, name: string): Record<string, unknown> {
  const { $schema: _draft, ...given } = tool.inputSchema as Record<string, unknown>;
  const parameters = normalizeMcpSchema(given);
  // As Letta: the health of the schema the model gets in strict mode (objects closed, optionals nullable).
  const health = schemaHealth(strictParameters(parameters));
  return {
    name,
    description: tool.description ?? '',
    parameters,
    'mcp:SCHEMA_STATUS': health.status,
    'mcp:SCHEMA_WARNINGS': health.reasons,
  };
}

/**
 * Why this tool cannot be stored, if it cannot: a name no model could call, or arguments marked to be
 * sent as headers that cannot be (SEP-2243: such a tool must not be called). A tool whose schema
 * is invalid even after normalizing is stored and listed with its health and reasons, but never
 * offered to a model (`offeredToModels`).
 */
function problemOf(tool: Tool): string | undefined {
  if (tool.name.length > MAX_NAME_LENGTH) return `its name is longer than ${MAX_NAME_LENGTH} characters`;
  if (!/^[A-Za-z0-9_-]+$/.test(tool.name)) return 'its name is not a valid function name';
  return paramHeaderProblem(tool.inputSchema);
}

/** Whether a model may be offered the tool: not an MCP tool whose schema is invalid. */
export const offeredToModels = (tool: Pick<ToolRow, 'json_schema'>) =>
  (tool.json_schema as Record<string, unknown>)['mcp:SCHEMA_STATUS'] !== 'INVALID';

/**
 * The stored fields for a listed tool, named `name`; what users set on the stored tool (limits,
 * approval) is kept.
 */
function fieldsOf(server: McpServerRow, tool: Tool, name: string, existing?: ToolRow) {
  const mcp: McpToolMetadata = {
    server_id: server.id,
    server_name: server.server_name,
    tool_name: tool.name,
    input_schema: tool.inputSchema,
    ...(tool.outputSchema ? { output_schema: tool.outputSchema } : {}),
    ...(taskSupportOf(tool) ? { task_support: taskSupportOf(tool) } : {}),
    ...(hintsOf(tool) ? { hints: hintsOf(tool) } : {}),
  };
  const tag = mcpToolTag(server.server_name);
  return {
    name,
    tool_type: MCP_TOOL_TYPE,
    description: tool.description ?? null,
    source_type: 'python',
    source_code: null,
    json_schema: schemaOf(tool, name),
    args_json_schema: null,
    tags: [tag, ...(existing?.tags ?? []).filter((t) => !t.startsWith('mcp:'))],
    return_char_limit: existing?.return_char_limit ?? DEFAULT_RETURN_CHAR_LIMIT,
    pip_requirements: null,
    npm_requirements: null,
    default_requires_approval: existing?.default_requires_approval ?? null,
    enable_parallel_execution: existing?.enable_parallel_execution ?? false,
    metadata: { ...(existing?.metadata ?? {}), mcp },
  } satisfies ToolFields;
}

/** Deep equality: jsonb hands objects back with their keys in its own order. */
const unchanged = (existing: ToolRow, fields: ToolFields) =>
  isDeepStrictEqual(
    [existing.json_schema, existing.description, existing.tags, existing.metadata],
    [fields.json_schema, fields.description, fields.tags, fields.metadata],
  );

/**
 * The name a newly listed tool is stored under: its own, or, where another tool (another server's
 * tool of the same name, a custom tool) has that, its own prefixed with its server's name
 * (`<server>__<tool>`), so that every server's tool can be attached and called, and the names a model
 * is offered stay unique. An error when neither name can be had.
 */
async function storedNameOf(
  tx: Queryable,
  server: McpServerRow,
  tool: Tool,
): Promise<{ name: string } | { problem: string }> {
  if (!(await getToolByName(tx, tool.name))) return { name: tool.name };
  const qualified = `${server.server_name.replace(/[^A-Za-z0-9_-]/g, '_')}__${tool.name}`;
  if (qualified.length > MAX_NAME_LENGTH)
    return {
      problem: `another tool has its name, and ${qualified} is longer than ${MAX_NAME_LENGTH} characters`,
    };
  if (await getToolByName(tx, qualified)) return { problem: `other tools have its name and ${qualified}` };
  return { name: qualified };
}

/**
 * Makes the server's stored tools match `listed`, in one transaction holding the server's row (syncs of
 * one server take turns). A stored tool keeps the name it was stored under (storedNameOf). A server
 * deleted meanwhile syncs nothing, nor does one whose config is no longer at `configVersion` (the
 * tools were listed with an older config).
 */
export function syncMcpTools(
  db: Database,
  serverId: string,
  listed: Tool[],
  configVersion?: number,
): Promise<SyncSummary> {
  return db.transaction(async (tx) => {
    const summary: SyncSummary = { added: [], updated: [], deleted: [], skipped: [] };
    const server = await getMcpServer(tx, serverId, true);
    if (!server || (configVersion !== undefined && server.config_version !== configVersion)) return summary;
    const stored = new Map((await toolsOfMcpServer(tx, serverId)).map((tool) => [mcpToolNameOf(tool), tool]));
    const kept = new Set<string>();
    for (const tool of listed) {
      const problem = problemOf(tool);
      if (problem) {
        summary.skipped.push({ name: tool.name, reason: problem });
        continue;
      }
      const existing = stored.get(tool.name);
      if (existing) {
        kept.add(tool.name);
        const fields = fieldsOf(server, tool, existing.name, existing);
        if (unchanged(existing, fields)) continue;
        await updateTool(tx, existing.id, fields);
        summary.updated.push(existing.name);
        continue;
      }
      const named = await storedNameOf(tx, server, tool);
      if ('problem' in named) {
        summary.skipped.push({ name: tool.name, reason: named.problem });
        continue;
      }
      await insertTool(tx, newId('tool'), fieldsOf(server, tool, named.name));
      summary.added.push(named.name);
    }
    for (const [name, tool] of stored) {
      if (kept.has(name)) continue;
      await deleteTool(tx, tool.id);
      summary.deleted.push(tool.name);
    }
    return summary;
  });
}

/**
 * Connects to a stored server (when it is used: servers are stored first), lists its tools with its
 * stored config and stores them, recording on the server how it went (`connection`): the tools
 * listed, or the failure to list them.
 */
export async function syncServerTools(
  db: Database,
  pool: McpClientPool,
  server: McpServerRow & Pick<McpServerRef, 'identityId'>,
): Promise<{ listed: Tool[]; summary: SyncSummary } | { failure: unknown }> {
  let listed: Tool[];
  try {
    listed = await pool.listTools(server);
  } catch (failure) {
    await recordMcpConnection(db, server, failure instanceof Error ? failure.message : String(failure));
    return { failure };
  }
  const summary = await syncMcpTools(db, server.id, listed, server.config_version);
  await recordMcpConnection(db, server, null);
  return { listed, summary };
}
