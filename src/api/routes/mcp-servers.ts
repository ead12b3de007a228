import type { Request, Response } from 'express';
import { z } from 'zod';
import type { ApiContext } from '../context';
import { DomainError } from '../../errors';
import { HttpError, notFound } from '../errors';
import { parseBody, parseParams, parseQuery } from '../validation';
import {
  McpOauthAuthorizeSchema,
  McpOauthStatusSchema,
  McpServerParams,
  McpServerSchema,
  McpToolParams,
  McpToolRunSchema,
  McpToolSyncSchema,
  RefreshQuery,
  type McpServer,
} from '../schemas/mcp-servers';
import { McpServerCreateSchema, McpServerUpdateSchema, type McpServerConfig } from '../../schemas/mcp-server';
import { mcpServerShape, toolExecutionShape, toolShape } from '../letta-shapes';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { ToolExecutionResultSchema, ToolSchema } from '../schemas/responses';
import * as repo from '../../db/mcp-servers';
import { deleteMcpOauth } from '../../db/mcp-oauth';
import { isUniqueViolation } from '../../db/sql';
import { getAgentRow } from '../../db/agents';
import { newId } from '../../ids';
import { McpAuthError, McpTimeoutError } from '../../mcp/connection';
import { McpAuthorizationRequiredError, authorizePath } from '../../mcp/oauth-connect';
import { authorizesPerIdentity } from '../../mcp/acting-identity';
import { getIdentity } from '../../db/identities';
import { McpStdioRefusedError } from '../../mcp/stdio-sandbox';
import { syncMcpTools } from '../../mcp/tool-sync';
import { toolsOfMcpServer } from '../../db/tools';
import { updatedConfig } from '../../mcp/server-config';
import { callMcpTool, serverOfTool } from '../../mcp/tool-call';
import { elicitResultOf, type ElicitationResponse } from '../../approvals/elicitation-answers';
import { ToolError } from '../../returns/tool-error';
import { mcpToolTimeoutMs } from '../../tools/tool-timeout';
import type { ToolRow } from '../../db/rows';

const BASE = '/v1/mcp-servers';

/**
 * What reaching a server can end in: 400 for a stdio server this server will not start (MCP_STDIO), 408
 * when it is too slow (as Letta), and otherwise `unreachable`: 400 for a config being registered (the
 * request's own config does not work), 502 for a stored server that stopped answering.
 */
async function fromServer<T>(serverName: string, unreachable: 400 | 502, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof HttpError || error instanceof DomainError || !(error instanceof Error)) throw error;
    const detail = `MCP server '${serverName}': ${error.message}`;
    if (error instanceof McpStdioRefusedError) throw new HttpError(400, detail);
    throw new HttpError(error instanceof McpTimeoutError ? 408 : unreachable, detail);
  }
}

const nameTaken = (name: string) => new HttpError(409, `An MCP server named '${name}' already exists`);

/** Runs a stored MCP tool now, outside any agent turn (the run endpoints). */
export async function runMcpToolNow(
  ctx: ApiContext,
  tool: ToolRow,
  args: Record<string, unknown>,
  elicitation?: ElicitationResponse,
): Promise<ReturnType<typeof toolExecutionShape>> {
  const server = await serverOfTool(ctx.db, tool).catch((error: unknown) => {
    throw error instanceof ToolError ? new HttpError(404, error.message) : error;
  });
  const result = await fromServer(server.server_name, 502, () =>
    callMcpTool(ctx.mcp, server, tool, args, {
      timeoutMs: mcpToolTimeoutMs(tool, server.config) ?? ctx.config.MCP_CALL_TIMEOUT_MS,
      // No one to ask during a direct run: the request says how its elicitations are answered.
      elicitation: elicitation && {
        answer: (params) => elicitResultOf(params, elicitation.action !== 'decline', elicitation),
      },
    }),
  );
  if ('pending' in result) throw new Error('a direct run answers its elicitations and never pauses');
  // An MCP call has no process output.
  return toolExecutionShape(
    { status: result.status, funcReturn: result.text, stdout: [], stderr: [] },
    tool.return_char_limit,
  );
}

/**
 * Letta's MCP servers API. Registering a server connects to it and stores its tools; a config change
 * connects again with the new config before it is stored, so a stored config is one that worked.
 */
export function mcpServersRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('MCP servers', { params: McpToolParams });
  const on = routeTable(router, mcpServersContext(ctx));
  on.post(BASE, createMcpServerDoc, createMcpServer);
  on.get(BASE, listMcpServersDoc, listMcpServers);
  on.get(`${BASE}/:mcpServerId`, retrieveMcpServerDoc, retrieveMcpServer);
  on.patch(`${BASE}/:mcpServerId`, updateMcpServerDoc, updateMcpServer);
  on.delete(`${BASE}/:mcpServerId`, deleteMcpServerDoc, deleteMcpServer);
  on.post(authorizePath(':mcpServerId'), authorizeMcpServerDoc, authorizeMcpServer);
  on.patch(`${BASE}/:mcpServerId/refresh`, refreshMcpServerToolsDoc, refreshMcpServerTools);
  on.get(`${BASE}/:mcpServerId/tools`, listToolsForMcpServerDoc, listToolsForMcpServer);
  on.get(`${BASE}/:mcpServerId/tools/:toolId`, retrieveMcpToolDoc, retrieveMcpTool);
  on.post(`${BASE}/:mcpServerId/tools/:toolId/run`, runMcpToolDoc, runMcpTool);

  return router;
}

/** What the routes of mcpServersRouter share. */
function mcpServersContext(ctx: ApiContext) {
  /** Letta's MCP server shape (mcpServerShape), with an OAuth-protected server's `oauth_status`. */
  const serverShape = async (server: repo.McpServerRow): Promise<McpServer> => {
    const oauthStatus = await ctx.mcp.oauth?.status(server.id);
    return { ...mcpServerShape(server), ...(oauthStatus ? { oauth_status: oauthStatus } : {}) };
  };

  /** A registration whose server asked for a user's authorization: its URL, or none. */
  const pendingAuthorization = async (id: string) =>
    (await ctx.mcp.oauth?.status(id))?.authorization_url ?? undefined;

  const loadServer = async (req: Request) => {
    const { mcpServerId } = parseParams(McpServerParams, req);
    const server = await repo.getMcpServer(ctx.db, mcpServerId);
    if (!server) throw notFound(`MCP server ${mcpServerId}`);
    return server;
  };

  const loadTool = async (req: Request) => {
    const { mcpServerId, toolId } = parseParams(McpToolParams, req);
    const tool = (await toolsOfMcpServer(ctx.db, mcpServerId)).find((t) => t.id === toolId);
    if (!tool) throw notFound(`Tool ${toolId} of MCP server ${mcpServerId}`);
    return tool;
  };

  /** Lists the tools with this config (connecting on the pool's client for this server id). */
  const listTools = (id: string, name: string, config: McpServerConfig) =>
    fromServer(name, 400, () => ctx.mcp.listTools({ id, config }));
  return { ctx, serverShape, pendingAuthorization, loadServer, loadTool, listTools };
}

type McpServersContext = ReturnType<typeof mcpServersContext>;

const createMcpServerDoc: RouteDoc = {
  summary: 'Create MCP server',
  description:
    'Connects to the server with the config given and stores its tools: a config that does not ' +
    'work is refused (400; 408 when the server is too slow). A server that asks for OAuth ' +
    'authorization by a user is stored without tools, its `oauth_status.authorization_url` where ' +
    'the user authorizes; the callback then stores its tools.',
  body: McpServerCreateSchema,
  response: McpServerSchema,
};

async function createMcpServer(
  { ctx, listTools, pendingAuthorization, serverShape }: McpServersContext,
  req: Request,
  res: Response,
) {
  const { server_name, config } = parseBody(McpServerCreateSchema, req);
  if (await repo.getMcpServerByName(ctx.db, server_name)) throw nameTaken(server_name);
  const id = newId('mcp_server');
  try {
    const tools = await listTools(id, server_name, config);
    const server = await repo.insertMcpServer(ctx.db, { id, server_name, config });
    const summary = await syncMcpTools(ctx.db, id, tools);
    if (summary.skipped.length)
      ctx.log.warn({ server: server_name, skipped: summary.skipped }, 'MCP tools skipped');
    res.json(await serverShape(server));
  } catch (error) {
    await ctx.mcp.drop(id);
    if (!isUniqueViolation(error) && (await pendingAuthorization(id))) {
      res.json(await serverShape(await repo.insertMcpServer(ctx.db, { id, server_name, config })));
      return;
    }
    await deleteMcpOauth(ctx.db, id);
    throw isUniqueViolation(error) ? nameTaken(server_name) : error;
  }
}

const listMcpServersDoc: RouteDoc = { summary: 'List MCP servers', response: z.array(McpServerSchema) };

async function listMcpServers({ ctx, serverShape }: McpServersContext, _req: Request, res: Response) {
  res.json(await Promise.all((await repo.listMcpServers(ctx.db)).map(serverShape)));
}

const retrieveMcpServerDoc: RouteDoc = { summary: 'Retrieve MCP server', response: McpServerSchema };

async function retrieveMcpServer(
  { loadServer, serverShape }: McpServersContext,
  req: Request<{ mcpServerId: string }>,
  res: Response,
) {
  res.json(await serverShape(await loadServer(req)));
}

const updateMcpServerDoc: RouteDoc = {
  summary: 'Update MCP server',
  description:
    'Fields left out or null keep their values, a masked credential sent back keeps the stored ' +
    'one, and the type cannot change. The server is connected to with the new config before it is ' +
    'stored, and its tools are synced.',
  body: McpServerUpdateSchema,
  response: McpServerSchema,
};

async function updateMcpServer(
  { ctx, listTools, loadServer, serverShape }: McpServersContext,
  req: Request<{ mcpServerId: string }>,
  res: Response,
) {
  const server = await loadServer(req);
  const update = parseBody(McpServerUpdateSchema, req);
  const serverName = update.server_name ?? server.server_name;
  const config = updatedConfig(server.config, update.config);
  const tools = await listTools(server.id, serverName, config);
  let updated: repo.McpServerRow;
  try {
    updated = await repo.updateMcpServer(ctx.db, server.id, { server_name: serverName, config });
  } catch (error) {
    throw isUniqueViolation(error) ? nameTaken(serverName) : error;
  }
  await syncMcpTools(ctx.db, server.id, tools);
  res.json(await serverShape(updated));
}

const deleteMcpServerDoc: RouteDoc = { summary: 'Delete MCP server', noContent: true };

async function deleteMcpServer(
  { ctx, loadServer }: McpServersContext,
  req: Request<{ mcpServerId: string }>,
  res: Response,
) {
  const server = await loadServer(req);
  await repo.deleteMcpServer(ctx.db, server.id);
  await ctx.mcp.drop(server.id);
  res.status(204).end();
}

const authorizeMcpServerDoc: RouteDoc = {
  summary: 'Authorize MCP server (ours)',
  description:
    "Starts an OAuth-protected server's authorization, the server's own or, where its config says " +
    "`oauth.per_identity`, the identity's: `authorized` when its tokens work, else the " +
    '`authorization_url` where the user authorizes (the callback completes it).',
  body: McpOauthAuthorizeSchema,
  response: McpOauthStatusSchema,
};

async function authorizeMcpServer({ ctx, loadServer }: McpServersContext, req: Request, res: Response) {
  const server = await loadServer(req);
  const identityId = parseBody(McpOauthAuthorizeSchema, req).identity_id ?? undefined;
  if (identityId && !authorizesPerIdentity(server))
    throw new HttpError(400, `MCP server '${server.server_name}' does not authorize per identity`);
  if (identityId && !(await getIdentity(ctx.db, identityId))) throw notFound(`Identity ${identityId}`);
  const ref = { ...server, ...(identityId ? { identityId } : {}) };
  const waiting = await fromServer(server.server_name, 502, () =>
    ctx.mcp.listTools(ref).then(
      () => false,
      (error: unknown) => {
        if (error instanceof McpAuthorizationRequiredError || error instanceof McpAuthError) return true;
        throw error;
      },
    ),
  );
  if (!waiting) {
    res.json({ authorized: true, authorization_url: null });
    return;
  }
  const status = await ctx.mcp.oauth?.status(server.id, identityId);
  if (!status?.authorization_url)
    throw new HttpError(502, `MCP server '${server.server_name}' refused the credentials`);
  res.json(status);
}

const refreshMcpServerToolsDoc: RouteDoc = {
  summary: 'Refresh MCP server tools',
  description:
    "Lists the server's tools again and makes the stored ones match: new ones added, changed " +
    'ones updated, gone ones deleted.',
  query: RefreshQuery,
  response: McpToolSyncSchema,
};

async function refreshMcpServerTools(
  { ctx, listTools, loadServer }: McpServersContext,
  req: Request<{ mcpServerId: string }>,
  res: Response,
) {
  const server = await loadServer(req);
  const { agent_id } = parseQuery(RefreshQuery, req);
  if (agent_id && !(await getAgentRow(ctx.db, agent_id))) throw notFound(`Agent ${agent_id}`);
  const tools = await listTools(server.id, server.server_name, server.config);
  res.json(await syncMcpTools(ctx.db, server.id, tools));
}

const listToolsForMcpServerDoc: RouteDoc = {
  summary: 'List tools for MCP server',
  response: z.array(ToolSchema),
};

async function listToolsForMcpServer(
  { ctx, loadServer }: McpServersContext,
  req: Request<{ mcpServerId: string }>,
  res: Response,
) {
  const server = await loadServer(req);
  res.json((await toolsOfMcpServer(ctx.db, server.id)).map(toolShape));
}

const retrieveMcpToolDoc: RouteDoc = { summary: 'Retrieve MCP tool', response: ToolSchema };

async function retrieveMcpTool(
  { loadTool }: McpServersContext,
  req: Request<{ mcpServerId: string; toolId: string }>,
  res: Response,
) {
  res.json(toolShape(await loadTool(req)));
}

const runMcpToolDoc: RouteDoc = {
  summary: 'Run MCP tool',
  body: McpToolRunSchema,
  response: ToolExecutionResultSchema,
};

async function runMcpTool(
  { ctx, loadTool }: McpServersContext,
  req: Request<{ mcpServerId: string; toolId: string }>,
  res: Response,
) {
  const tool = await loadTool(req);
  const body = parseBody(McpToolRunSchema, req);
  res.json(await runMcpToolNow(ctx, tool, body.args, body.elicitation_response ?? undefined));
}
