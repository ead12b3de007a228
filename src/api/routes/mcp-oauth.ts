import type { Request, Response } from 'express';
/**
 * The browser's side of an OAuth-protected MCP server's authorization (src/mcp/oauth.ts): the callback
 * its authorization server redirects to, and this server's client ID metadata document. Both are open
 * without the password: a redirect carries none. The callback acts only with the state of a pending
 * authorization, once, before it expires.
 */
import { z } from 'zod';
import type { ApiContext } from '../context';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { HttpError } from '../errors';
import { parseQuery } from '../validation';
import * as repo from '../../db/mcp-servers';
import { CALLBACK_PATH, CLIENT_METADATA_PATH, clientMetadataOf } from '../../mcp/oauth';
import { syncServerTools } from '../../mcp/tool-sync';

const CallbackQuery = z.object({
  code: z.string().min(1).optional(),
  state: z.string().min(1).max(512).optional(),
  iss: z.string().max(2048).optional(),
  error: z.string().max(200).optional(),
  error_description: z.string().max(1000).optional(),
});

const CallbackAnswer = z.object({
  status: z.literal('success'),
  message: z.string(),
  server_url: z.string(),
});

/** The client ID metadata document (RFC 7591's client metadata, with its `client_id`). */
const ClientMetadataAnswer = z
  .object({
    client_id: z.string(),
    client_name: z.string(),
    redirect_uris: z.array(z.string()),
    grant_types: z.array(z.string()),
    response_types: z.array(z.string()),
    token_endpoint_auth_method: z.string(),
  })
  .loose();

export function mcpOauthRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('MCP servers', { public: true });
  const on = routeTable(router, mcpOauthContext(ctx));
  on.get(CALLBACK_PATH, mcpOauthCallbackDoc, mcpOauthCallback);
  on.get(CLIENT_METADATA_PATH, oauthClientMetadataDoc, oauthClientMetadata);

  return router;
}

/** What the routes of mcpOauthRouter share. */
function mcpOauthContext(ctx: ApiContext) {
  const oauth = () => {
    if (!ctx.mcp.oauth) throw new HttpError(404, 'OAuth for MCP servers is not set up here');
    return ctx.mcp.oauth;
  };
  return { ctx, oauth };
}

type McpOauthContext = ReturnType<typeof mcpOauthContext>;

const mcpOauthCallbackDoc: RouteDoc = {
  summary: 'MCP OAuth callback',
  description:
    "Where an OAuth-protected MCP server's authorization server sends the user back: the code is exchanged for tokens and the server's tools are synced. Needs no password; acts only with the state of a pending authorization, once, before it expires (400 otherwise).",
  query: CallbackQuery,
  response: CallbackAnswer,
  errors: [400, 404, 422],
};

async function mcpOauthCallback({ ctx, oauth }: McpOauthContext, req: Request, res: Response) {
  const { code, state, iss, error, error_description } = parseQuery(CallbackQuery, req);
  if (!state) throw new HttpError(400, 'Missing state parameter');
  const owner = await oauth()
    .takePending(state)
    .catch((failure: unknown) => {
      throw new HttpError(400, (failure as Error).message);
    });
  if (error)
    throw new HttpError(400, `OAuth error: ${error}${error_description ? ` - ${error_description}` : ''}`);
  if (!code) throw new HttpError(400, 'Missing authorization code');
  await oauth()
    .checkIssuer(owner, iss)
    .catch((failure: unknown) => {
      throw new HttpError(400, (failure as Error).message);
    });
  const stored = await repo.getMcpServer(ctx.db, owner.serverId);
  if (!stored) throw new HttpError(404, `MCP server ${owner.serverId} was deleted`);
  // An identity's authorization (`oauth.per_identity`) is completed, and checked, with its own tokens.
  const server = { ...stored, ...(owner.identityId ? { identityId: owner.identityId } : {}) };
  const failed = (what: string) => (failure: unknown) => {
    throw new HttpError(502, `MCP server '${server.server_name}': ${what}: ${(failure as Error).message}`);
  };
  await oauth().exchange(server, code).catch(failed('the authorization could not be completed'));
  await ctx.mcp.drop(server.id);
  const synced = await syncServerTools(ctx.db, ctx.mcp, server);
  if ('failure' in synced) failed('authorized, but its tools could not be listed')(synced.failure);
  const { server_url } = server.config as { server_url: string };
  res
    .set('cache-control', 'no-store')
    .json({ status: 'success', message: 'Authorization successful', server_url });
}

const oauthClientMetadataDoc: RouteDoc = {
  summary: "This server's OAuth client metadata",
  description:
    'The client ID metadata document (SEP-991) authorization servers read when this server uses its URL as its client_id. Needs no password.',
  response: ClientMetadataAnswer,
  errors: [404],
};

function oauthClientMetadata({ oauth }: McpOauthContext, _req: Request, res: Response) {
  const { publicUrl } = oauth().settings;
  res.json({ client_id: new URL(CLIENT_METADATA_PATH, publicUrl).href, ...clientMetadataOf(publicUrl) });
}
