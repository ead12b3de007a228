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
import { isUniqueViolation } from '../../db/sql';
import { getAgentRow } from '../../db/agents';
import { newId } from '../../ids';
import { McpAuthError, McpTimeoutError } from '../../mcp/connection';
import { McpAuthorizationRequiredError, authorizePath } from '../../mcp/oauth-connect';
import { authorizesPerIdentity } from '../../mcp/acting-identity';
import { getIdentity } from '../../db/identities';
import { McpStdioRefusedError } from '../../mcp/stdio-sandbox';
import { syncServerTools } from '../../mcp/tool-sync';
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
 * when it is too slow (as Letta), 424 when it cannot be reached or refuses (the server the request
 * depends on failed).
 */
function reachError(serverName: string, error: unknown): unknown {
  if (error instanceof HttpError || error instanceof DomainError || !(error instanceof Error)) return error;
  const detail = `MCP server '${serverName}': ${error.message}`;
  if (error instanceof McpStdioRefusedError) return new HttpError(400, detail);
  return new HttpError(error instanceof McpTimeoutError ? 408 : 424, detail);
}

async function fromServer<T>(serverName: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw reachError(serverName, error);
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
  const result = await fromServer(server.server_name, () =>
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
 * Letta's MCP servers API. A server is stored first and connected to when it is used, as Letta does: a
 * registration or a config change is stored, then tried once, its tools stored if it answers; listing
 * its tools or calling them connects then. How its last attempt went is on the server (`connection`).
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
    return {
      ...mcpServerShape(server, ctx.config.MCP_SHOW_CREDENTIALS),
      ...(oauthStatus ? { oauth_status: oauthStatus } : {}),
    };
  };

  /** Whether the server waits for a user's authorization (nothing to connect with until it comes). */
  const authorizationPending = async (id: string) =>
    Boolean((await ctx.mcp.oauth?.status(id))?.authorization_url);

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

  /** Refuses (400) a config this server will not start (MCP_STDIO); connects to nothing. */
  const checkConfig = (name: string, config: McpServerConfig) =>
    fromServer(name, () => ctx.mcp.check(config));

  /** Connects to the server and stores its tools; its failure, recorded, as the answer's error. */
  const syncTools = async (server: repo.McpServerRow) => {
    const synced = await syncServerTools(ctx.db, ctx.mcp, server);
    if ('failure' in synced) throw reachError(server.server_name, synced.failure);
    const { summary } = synced;
    if (summary.skipped.length)
      ctx.log.warn({ server: server.server_name, skipped: summary.skipped }, 'MCP tools skipped');
    return summary;
  };

  /**
   * A server just stored, tried once (as Letta does): its tools stored if it answers, else its
   * failure recorded. The server as it is now.
   */
  const tried = async (server: repo.McpServerRow) => {
    await syncTools(server).catch((error: unknown) => {
      if (!(error instanceof HttpError)) throw error;
      ctx.log.info({ server: server.server_name, error: error.message }, 'MCP server stored, not reached');
    });
    return (await repo.getMcpServer(ctx.db, server.id)) ?? server;
  };
  return { ctx, serverShape, authorizationPending, loadServer, loadTool, checkConfig, syncTools, tried };
}

type McpServersContext = ReturnType<typeof mcpServersContext>;

const createMcpServerDoc: RouteDoc = {
  summary: 'Create MCP server',
  description:
    'Stores the server, then connects to it once and stores its tools, as Letta does: a server that ' +
    'cannot be reached now is stored all the same, its `connection` saying why (its tools are listed ' +
    'when it answers). A stdio server this server will not start is refused (400). A server that asks ' +
    'for OAuth authorization by a user is stored without tools, its `oauth_status.authorization_url` ' +
    'where the user authorizes; the callback then stores its tools.',
  body: McpServerCreateSchema,
  response: McpServerSchema,
};

async function createMcpServer(
  { ctx, checkConfig, serverShape, tried }: McpServersContext,
  req: Request,
  res: Response,
) {
  const { server_name, config } = parseBody(McpServerCreateSchema, req);
  if (await repo.getMcpServerByName(ctx.db, server_name)) throw nameTaken(server_name);
  await checkConfig(server_name, config);
  const server = await repo
    .insertMcpServer(ctx.db, { id: newId('mcp_server'), server_name, config })
    .catch((error: unknown) => {
      throw isUniqueViolation(error) ? nameTaken(server_name) : error;
    });
  res.json(await serverShape(await tried(server)));
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
    'one, and the type cannot change. The config is stored, then tried once as at registration: ' +
    'its tools are synced if the server answers, and its `connection` says how it went.',
  body: McpServerUpdateSchema,
  response: McpServerSchema,
};

async function updateMcpServer(
  { ctx, checkConfig, loadServer, serverShape, tried }: McpServersContext,
  req: Request<{ mcpServerId: string }>,
  res: Response,
) {
  const server = await loadServer(req);
  const update = parseBody(McpServerUpdateSchema, req);
  const serverName = update.server_name ?? server.server_name;
  const config = updatedConfig(server.config, update.config);
  await checkConfig(serverName, config);
  const updated = await repo
    .updateMcpServer(ctx.db, server.id, { server_name: serverName, config })
    .catch((error: unknown) => {
      throw isUniqueViolation(error) ? nameTaken(serverName) : error;
    });
  res.json(await serverShape(await tried(updated)));
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
  const waiting = await fromServer(server.server_name, () =>
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
  { ctx, loadServer, syncTools }: McpServersContext,
  req: Request<{ mcpServerId: string }>,
  res: Response,
) {
  const server = await loadServer(req);
  const { agent_id } = parseQuery(RefreshQuery, req);
  if (agent_id && !(await getAgentRow(ctx.db, agent_id))) throw notFound(`Agent ${agent_id}`);
  res.json(await syncTools(server));
}

const listToolsForMcpServerDoc: RouteDoc = {
  summary: 'List tools for MCP server',
  description:
    'The stored tools of a server that answered with its config. One not connected to yet, or ' +
    'whose last attempt failed, is connected to first (unless it waits for a user to authorize it): ' +
    'one that cannot be reached is a 424 (408 when too slow), its `connection` saying why.',
  response: z.array(ToolSchema),
};

async function listToolsForMcpServer(
  { ctx, authorizationPending, loadServer, syncTools }: McpServersContext,
  req: Request<{ mcpServerId: string }>,
  res: Response,
) {
  const server = await loadServer(req);
  if (server.connection.status !== 'connected' && !(await authorizationPending(server.id)))
    await syncTools(server);
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
