import type { Request, Response } from 'express';
/**
 * Letta's client-side access tokens (`client.accessTokens` in the official clients): tokens that reach
 * only the agents their policy names (src/access/access-tokens.ts, src/api/scoped-access.ts). Only the
 * server's own credential manages them: a token cannot make, list or revoke tokens.
 */
import type { ApiContext } from '../context';
import { parseBody, parseQuery } from '../validation';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import {
  AccessTokenListSchema,
  AccessTokenSchema,
  createAccessTokenSchema,
  ListAccessTokensQuery,
} from '../schemas/access-tokens';
import { createAccessToken, listTokens, revokeToken, type AccessTokenView } from '../../access/access-tokens';

const shapeOf = (view: AccessTokenView) => ({
  token: view.token,
  expiresAt: view.expiresAt.toISOString(),
  hostname: view.hostname,
  policy: { data: view.policy, version: '1' as const },
});

export function accessTokensRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Client-side access tokens');
  const context = accessTokensContext(ctx);
  const on = routeTable(router, context);
  on.post(
    '/v1/client-side-access-tokens',
    {
      summary: 'Create client side access token',
      description:
        'The token is in this answer only: the server keeps its hash. It expires after ACCESS_TOKEN_DEFAULT_TTL_MS unless `expires_at` says otherwise.',
      body: context.CreateAccessTokenSchema,
      response: AccessTokenSchema,
    },
    createClientSideAccessToken,
  );
  on.get('/v1/client-side-access-tokens', listClientSideAccessTokensDoc, listClientSideAccessTokens);
  on.delete(
    '/v1/client-side-access-tokens/:token',
    deleteClientSideAccessTokenDoc,
    deleteClientSideAccessToken,
  );

  return router;
}

/** What the routes of accessTokensRouter share. */
function accessTokensContext(ctx: ApiContext) {
  const { config } = ctx;
  const CreateAccessTokenSchema = createAccessTokenSchema(config.ACCESS_TOKEN_MAX_AGENTS);
  const limits = {
    defaultTtlMs: config.ACCESS_TOKEN_DEFAULT_TTL_MS,
    maxTtlMs: config.ACCESS_TOKEN_MAX_TTL_MS,
  };
  return { ctx, config, CreateAccessTokenSchema, limits };
}

type AccessTokensContext = ReturnType<typeof accessTokensContext>;

async function createClientSideAccessToken(
  { CreateAccessTokenSchema, ctx, limits }: AccessTokensContext,
  req: Request,
  res: Response,
) {
  const body = parseBody(CreateAccessTokenSchema, req);
  const view = await createAccessToken(
    ctx.db,
    {
      hostname: body.hostname,
      policy: body.policy,
      expiresAt: body.expires_at ? new Date(body.expires_at) : undefined,
    },
    limits,
  );
  res.json(shapeOf(view));
}

const listClientSideAccessTokensDoc: RouteDoc = {
  summary: 'List client side access tokens',
  description: 'Unexpired tokens, newest first, each by its public id: never their secrets.',
  query: ListAccessTokensQuery,
  response: AccessTokenListSchema,
};

async function listClientSideAccessTokens({ ctx }: AccessTokensContext, req: Request, res: Response) {
  const { tokens, hasNextPage } = await listTokens(ctx.db, parseQuery(ListAccessTokensQuery, req));
  res.json({ hasNextPage, tokens: tokens.map(shapeOf) });
}

const deleteClientSideAccessTokenDoc: RouteDoc = {
  summary: 'Delete client side access token',
  description: 'Revokes the token (its id, or the whole token) at once.',
};

async function deleteClientSideAccessToken(
  { ctx }: AccessTokensContext,
  req: Request<{ token: string }>,
  res: Response,
) {
  await revokeToken(ctx.db, req.params.token);
  res.json({});
}
