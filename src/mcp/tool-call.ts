/** Calling a stored MCP tool: its server's client from the pool, its result as the model reads it. */
import type { Queryable } from '../db';
import { getMcpServer, type McpServerRow } from '../db/mcp-servers';
import type { ToolRow } from '../db/rows';
import { ToolError } from '../tools/tool-error';
import { stripOptionalNulls } from '../tools/strict-mode';
import type { McpCallOptions, McpClientPool } from './client-pool';
import { McpTimeoutError } from './connection';
import { McpStdioRefusedError } from './stdio-sandbox';
import { mcpToolResult, type McpToolResult } from './tool-result';
import { mcpInputSchemaOf, mcpOutputSchemaOf, mcpServerIdOf, mcpTaskSupportOf } from './tool-sync';

/** A tool whose server is gone: the tool's failure. */
export const serverGone = (tool: ToolRow) =>
  new ToolError(`the MCP server of tool ${tool.name} is no longer registered`);

/** The server a stored MCP tool belongs to. */
export async function serverOfTool(db: Queryable, tool: ToolRow): Promise<McpServerRow> {
  const serverId = mcpServerIdOf(tool);
  const server = serverId ? await getMcpServer(db, serverId) : undefined;
  if (!server) throw serverGone(tool);
  return server;
}

/**
 * Calls the tool with the model's arguments, minus the nulls strict mode makes the model send for
 * optional ones (MCP servers validate their input and refuse a null where a value or nothing goes). The
 * server's `isError`, a structured result that does not fit the tool's output schema, a call past its
 * timeout and a stdio server this server will not start (MCP_STDIO) are error results; a connection
 * that fails throws.
 */
export async function callMcpTool(
  pool: McpClientPool,
  server: McpServerRow,
  tool: ToolRow,
  args: Record<string, unknown>,
  options: McpCallOptions,
): Promise<McpToolResult> {
  const parameters = (tool.json_schema as { parameters?: unknown }).parameters;
  try {
    const result = await pool.callTool(server, tool.name, stripOptionalNulls(args, parameters), {
      inputSchema: mcpInputSchemaOf(tool),
      taskSupport: mcpTaskSupportOf(tool),
      ...options,
    });
    return mcpToolResult(tool.name, result, mcpOutputSchemaOf(tool));
  } catch (error) {
    if (error instanceof McpTimeoutError) return failed(tool, 'TimeoutError', error.message);
    if (error instanceof McpStdioRefusedError) return failed(tool, error.name, error.message);
    throw error;
  }
}

const failed = (tool: ToolRow, kind: string, message: string): McpToolResult => ({
  status: 'error',
  text: `Error executing function ${tool.name}: ${kind}: ${message}`,
});
