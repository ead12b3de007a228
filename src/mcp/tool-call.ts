/** Calling a stored MCP tool: its server's client from the pool, its result as the model reads it. */
import type { Queryable } from '../db';
import { getMcpServer, type McpServerRow } from '../db/mcp-servers';
import type { ToolRow } from '../db/rows';
import { ToolError } from '../returns/tool-error';
import { stripOptionalNulls } from '../schemas/strict-mode';
import type { McpCallOptions, McpClientPool } from './client-pool';
import { McpTimeoutError } from './connection';
import { McpStdioRefusedError } from './stdio-sandbox';
import { McpAuthorizationRequiredError } from './oauth-connect';
import { mcpToolResult, type McpToolResult } from './tool-result';
import {
  mcpInputSchemaOf,
  mcpOutputSchemaOf,
  mcpServerIdOf,
  mcpTaskSupportOf,
  mcpToolNameOf,
} from './tool-sync';
import type { ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpElicitationRow } from '../db/mcp-elicitations';
import type { McpCallOutcome, PendingElicitation } from './elicited-calls';
import { McpInputRoundsError, withAnswer } from './input-required';

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

/** A server as a call reaches it: for an identity, where its OAuth tokens are kept per identity. */
type CalledServer = McpServerRow & { identityId?: string };

/** A call paused for its server's elicitation: what the server asked, nothing recorded yet. */
export interface McpToolPause {
  pending: PendingElicitation;
}

/** The model's arguments as the server gets them. */
function calledArguments(tool: ToolRow, args: Record<string, unknown>): Record<string, unknown> {
  const parameters = (tool.json_schema as { parameters?: unknown }).parameters;
  return stripOptionalNulls(args, parameters);
}

/**
 * Calls the tool with the model's arguments, minus the nulls strict mode makes the model send for
 * optional ones (MCP servers validate their input and refuse a null where a value or nothing goes). The
 * server's `isError`, a structured result that does not fit the tool's output schema, a call past its
 * timeout and a stdio server this server will not start (MCP_STDIO) are error results; a connection
 * that fails throws. A call that pauses for an elicitation (`options.elicitation`) ends in a pause.
 */
export async function callMcpTool(
  pool: McpClientPool,
  server: CalledServer,
  tool: ToolRow,
  args: Record<string, unknown>,
  options: McpCallOptions,
): Promise<McpToolResult | McpToolPause> {
  const called = calledArguments(tool, args);
  const taskSupport = mcpTaskSupportOf(tool);
  return resultOf(tool, () =>
    pool.callTool(server, mcpToolNameOf(tool), called, {
      ...options,
      inputSchema: mcpInputSchemaOf(tool),
      taskSupport,
    }),
  );
}

/**
 * Gives a paused call its elicitation's answer. A call paused on an input-required result (2026-07-28)
 * is called again with its answers (input-required.ts), any question after the answered one
 * declined. Otherwise the answer goes to the call this
 * process still holds open, else on the server's streamable HTTP session, taken up from before the
 * elicitation (the server asks again and gets the answer); a call with neither is an error result
 * that says so: the tool is never called a second time.
 */
export async function answerMcpElicitation(
  pool: McpClientPool,
  server: CalledServer,
  tool: ToolRow,
  args: Record<string, unknown>,
  elicitation: McpElicitationRow & { answer: ElicitResult },
  options: McpCallOptions,
): Promise<McpToolResult | McpToolPause> {
  const { tool_call_id: key, answer, session_id: sessionId, resumption_token: resumptionToken } = elicitation;
  const withSchema = { ...options, inputSchema: mcpInputSchemaOf(tool) };
  const { retry } = elicitation;
  if (retry) {
    const call = { name: mcpToolNameOf(tool), arguments: calledArguments(tool, args) };
    // A step pauses once per call: questions after the one answered are declined.
    const declining = { ...withSchema, elicitation: { answer: () => ({ action: 'decline' as const }) } };
    return resultOf(tool, () => pool.continueInputs(server, call, withAnswer(retry, answer), declining));
  }
  return resultOf(tool, async () => {
    const held = await pool.answerHeld(key, answer, mcpToolNameOf(tool), withSchema);
    if (held) return held;
    if (!sessionId || !resumptionToken) throw new McpSessionGoneError(sessionGoneText(server));
    return pool.resumeCall(server, { sessionId, resumptionToken }, answer, mcpToolNameOf(tool), withSchema);
  });
}

/** A paused call no process holds any more, on a server whose session cannot be taken up. */
class McpSessionGoneError extends Error {
  override name = 'McpSessionGoneError';
}

const sessionGoneText = (server: McpServerRow) =>
  `the call to MCP server '${server.server_name}' that waited for this answer is gone (the worker that held it stopped, or its hold ran out) and the server offers no session to take it up again (stdio, SSE, or no resumable stream), so the answer did not reach it; the tool was not called again`;

async function resultOf(
  tool: ToolRow,
  call: () => Promise<McpCallOutcome>,
): Promise<McpToolResult | McpToolPause> {
  try {
    const outcome = await call();
    if ('pending' in outcome) return outcome;
    return mcpToolResult(tool.name, outcome.result, mcpOutputSchemaOf(tool));
  } catch (error) {
    if (error instanceof McpTimeoutError) return failed(tool, 'TimeoutError', error.message);
    if (
      error instanceof McpStdioRefusedError ||
      error instanceof McpSessionGoneError ||
      error instanceof McpInputRoundsError ||
      error instanceof McpAuthorizationRequiredError
    )
      return failed(tool, error.name, error.message);
    throw error;
  }
}

const failed = (tool: ToolRow, kind: string, message: string): McpToolResult => ({
  status: 'error',
  text: `Error executing function ${tool.name}: ${kind}: ${message}`,
});
