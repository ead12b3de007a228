import type { Request, Response } from 'express';
/**
 * Letta's OAuth connect stream for a registered MCP server (GET /v1/mcp-servers/connect/{id}): what a
 * UI shows while a server is reached and, when it asks for OAuth, authorized by a user. Its events are
 * Letta's (`connection_attempt`, `success` with the server's tools, `oauth_required`,
 * `authorization_url`, `waiting_for_auth`, `error`), one JSON per `data:` line.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { ApiContext } from '../context';
import { notFound } from '../errors';
import { openEventStream } from '../event-stream';
import { parseParams } from '../validation';
import { McpServerParams } from '../schemas/mcp-servers';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import * as repo from '../../db/mcp-servers';
import { syncServerTools } from '../../mcp/tool-sync';

/** How often a stream waiting for a user's authorization looks whether the callback came. */
const AUTHORIZATION_POLL_MS = 500;

const McpConnectEventSchema = z
  .object({
    event: z.enum([
      'connection_attempt',
      'success',
      'error',
      'oauth_required',
      'authorization_url',
      'waiting_for_auth',
    ]),
    server_name: z.string().optional(),
    message: z.string().optional(),
    url: z.string().optional(),
    session_id: z.string().optional(),
    tools: z.array(z.record(z.string(), z.unknown())).optional(),
  })
  .meta({ id: 'McpConnectEvent' });
type McpConnectEvent = z.infer<typeof McpConnectEventSchema>;

export function mcpConnectRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('MCP servers', { params: McpServerParams });
  const on = routeTable(router, ctx);
  on.get('/v1/mcp-servers/connect/:mcpServerId', connectMcpServerDoc, connectMcpServer);

  return router;
}

const connectMcpServerDoc: RouteDoc = {
  summary: 'Connect MCP server',
  description:
    "Connects to a registered server and streams what happens, as Letta's connect stream does: " +
    '`success` with its tools (stored as a refresh stores them); for a server that asks for OAuth, ' +
    '`oauth_required`, `authorization_url` (where the user authorizes) and `waiting_for_auth`, then ' +
    '`success` once the callback has come, or `error` when the authorization expires ' +
    '(MCP_OAUTH_STATE_TTL_SECONDS) first.',
  response: McpConnectEventSchema,
  streams: true,
};

async function connectMcpServer(ctx: ApiContext, req: Request<{ mcpServerId: string }>, res: Response) {
  const { mcpServerId } = parseParams(McpServerParams, req);
  const server = await repo.getMcpServer(ctx.db, mcpServerId);
  if (!server) throw notFound(`MCP server ${mcpServerId}`);
  const closed = openEventStream(res);
  const send = (event: McpConnectEvent) => res.write(`data: ${JSON.stringify(event)}\n\n`);
  send({ event: 'connection_attempt', server_name: server.server_name });
  for await (const event of connectEvents(ctx, server, closed)) send(event);
  res.end();
}

async function* connectEvents(
  ctx: ApiContext,
  server: repo.McpServerRow,
  closed: AbortSignal,
): AsyncGenerator<McpConnectEvent> {
  const connected = async (): Promise<McpConnectEvent> => {
    const synced = await syncServerTools(ctx.db, ctx.mcp, server);
    if ('failure' in synced) throw synced.failure;
    return { event: 'success', tools: synced.listed as unknown as Record<string, unknown>[] };
  };
  const failed = (error: unknown): McpConnectEvent => ({
    event: 'error',
    message: `Connection failed: ${(error as Error).message}`,
  });
  try {
    yield await connected();
    return;
  } catch (error) {
    await ctx.mcp.drop(server.id);
    const url = (await ctx.mcp.oauth?.status(server.id))?.authorization_url;
    if (!url) {
      yield failed(error);
      return;
    }
    yield { event: 'oauth_required', message: 'OAuth authentication required' };
    yield { event: 'authorization_url', url, session_id: server.id };
    yield { event: 'waiting_for_auth', message: 'Waiting for user authorization...' };
  }
  if (!(await authorizedInTime(ctx, server.id, closed))) {
    if (!closed.aborted) yield { event: 'error', message: 'The authorization was not completed in time' };
    return;
  }
  yield await connected().catch(failed);
}

/** Waits for the callback to store tokens, for as long as the pending authorization lives. */
async function authorizedInTime(ctx: ApiContext, serverId: string, closed: AbortSignal): Promise<boolean> {
  const deadline = Date.now() + ctx.config.MCP_OAUTH_STATE_TTL_SECONDS * 1000;
  while (!closed.aborted && Date.now() < deadline) {
    await sleep(AUTHORIZATION_POLL_MS, undefined, { signal: closed }).catch(() => undefined);
    const status = await ctx.mcp.oauth?.status(serverId);
    if (status?.authorized && !status.authorization_url) return true;
  }
  return false;
}
