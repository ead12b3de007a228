import type { Request, Response } from 'express';
/**
 * Letta's identities (routers/v1/identities.py): who agents and blocks belong to, by the caller's own
 * `identifier_key`, with typed properties; agents are listed by identity with `identity_id`.
 */
import { z } from 'zod';
import type { ApiContext } from '../context';
import { notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import { blockShape, identityShape, type AgentRelationship } from '../letta-shapes';
import { agentStates } from '../agent-state';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { AgentStateSchema, BlockSchema, IdentitySchema } from '../schemas/responses';
import { pageQuery } from '../schemas/common';
import {
  IdentityCreateSchema,
  IdentityUpdateSchema,
  ListIdentitiesQuery,
  PropertySchema,
} from '../schemas/identities';
import * as repo from '../../db/identities';
import { getAgentRow, listAgentRows } from '../../db/agents';
import { blockLabels, getBlock } from '../../db/blocks';
import { conflict } from '../../errors';
import { newId } from '../../ids';
import type { Queryable } from '../../db';

const NO_RELATIONSHIPS: ReadonlySet<AgentRelationship> = new Set();

/** The body of PUT /v1/identities/:identityId/properties: the identity's properties, all of them. */
const PropertiesBody = z.array(PropertySchema);
const AgentsPageQuery = pageQuery(50, 'desc');

/** Attaches the agents and blocks named (404 for one that does not exist). */
async function setLinks(
  db: Queryable,
  id: string,
  links: { agent_ids?: string[] | null; block_ids?: string[] | null },
) {
  if (links.agent_ids) {
    for (const agentId of links.agent_ids)
      if (!(await getAgentRow(db, agentId))) throw notFound(`Agent ${agentId}`);
    await repo.setIdentityLinks(db, id, 'agent', links.agent_ids);
  }
  if (links.block_ids) {
    const found = await blockLabels(db, links.block_ids);
    const missing = links.block_ids.find((b) => !found.some((f) => f.id === b));
    if (missing) throw notFound(`Block ${missing}`);
    await repo.setIdentityLinks(db, id, 'block', links.block_ids);
  }
}

export function identitiesRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Identities');
  const on = routeTable(router, identitiesContext(ctx));
  on.post('/v1/identities', createIdentityDoc, createIdentity);
  on.put('/v1/identities', upsertIdentityDoc, upsertIdentity);
  on.get('/v1/identities', listIdentitiesDoc, listIdentities);
  on.get('/v1/identities/:identityId', retrieveIdentityDoc, retrieveIdentity);
  on.patch('/v1/identities/:identityId', modifyIdentityDoc, modifyIdentity);
  on.put('/v1/identities/:identityId/properties', upsertIdentityPropertiesDoc, upsertIdentityProperties);
  on.delete('/v1/identities/:identityId', deleteIdentityDoc, deleteIdentity);
  on.get('/v1/identities/:identityId/agents', listAgentsForIdentityDoc, listAgentsForIdentity);
  on.get('/v1/identities/:identityId/blocks', listBlocksForIdentityDoc, listBlocksForIdentity);

  for (const action of ['attach', 'detach'] as const)
    on.patch(
      `/v1/agents/:agentId/identities/${action}/:identityId`,
      identityLinkDoc(action),
      linkIdentity(action),
    );

  return router;
}

/** What the routes of identitiesRouter share. */
function identitiesContext(ctx: ApiContext) {
  const load = async (id: string) => {
    const identity = await repo.getIdentity(ctx.db, id);
    if (!identity) throw notFound(`Identity ${id}`);
    return identity;
  };

  const create = async (body: z.infer<typeof IdentityCreateSchema>) => {
    const id = newId('identity');
    await ctx.db.transaction(async (tx) => {
      if (await repo.identityByKey(tx, body.identifier_key))
        throw conflict(`An identity with identifier_key '${body.identifier_key}' already exists`);
      await repo.insertIdentity(tx, id, {
        identifier_key: body.identifier_key,
        name: body.name,
        identity_type: body.identity_type,
        project_id: body.project_id ?? null,
        properties: body.properties ?? [],
      });
      await setLinks(tx, id, body);
    });
    return load(id);
  };

  const update = async (id: string, body: z.infer<typeof IdentityUpdateSchema>) => {
    await ctx.db.transaction(async (tx) => {
      await repo.updateIdentity(tx, id, {
        identifier_key: body.identifier_key,
        name: body.name,
        identity_type: body.identity_type,
        properties: body.properties ?? undefined,
      });
      await setLinks(tx, id, body);
    });
    return load(id);
  };
  return { ctx, load, create, update };
}

type IdentitiesContext = ReturnType<typeof identitiesContext>;

const identityLinkDoc = (action: 'attach' | 'detach'): RouteDoc => ({
  summary: action === 'attach' ? 'Attach identity to agent' : 'Detach identity from agent',
  response: z.null(),
});

/** Links an identity to an agent, or unlinks it, as `action` says. */
function linkIdentity(action: 'attach' | 'detach') {
  return async function linkIdentityRoute(
    { ctx, load }: IdentitiesContext,
    req: Request<{ agentId: string; identityId: string }>,
    res: Response,
  ) {
    const { agentId, identityId } = req.params;
    if (!(await getAgentRow(ctx.db, agentId))) throw notFound(`Agent ${agentId}`);
    await load(identityId);
    await repo.linkAgent(ctx.db, identityId, agentId, action === 'attach');
    res.json(null);
  };
}

const createIdentityDoc: RouteDoc = {
  summary: 'Create identity',
  body: IdentityCreateSchema,
  response: IdentitySchema,
};

async function createIdentity({ create }: IdentitiesContext, req: Request, res: Response) {
  res.json(identityShape(await create(parseBody(IdentityCreateSchema, req))));
}

// Upsert: the identity of that identifier_key is updated, else made.
const upsertIdentityDoc: RouteDoc = {
  summary: 'Upsert identity',
  description:
    'The identity of that `identifier_key` is updated with the fields given; if there is none, ' +
    'it is created.',
  body: IdentityCreateSchema,
  response: IdentitySchema,
};

async function upsertIdentity({ create, ctx, update }: IdentitiesContext, req: Request, res: Response) {
  const body = parseBody(IdentityCreateSchema, req);
  const existing = await repo.identityByKey(ctx.db, body.identifier_key);
  res.json(identityShape(existing ? await update(existing.id, body) : await create(body)));
}

const listIdentitiesDoc: RouteDoc = {
  summary: 'List identities',
  query: ListIdentitiesQuery,
  response: z.array(IdentitySchema),
};

async function listIdentities({ ctx }: IdentitiesContext, req: Request, res: Response) {
  const { name, identifier_key, identity_type, project_id, ...page } = parseQuery(ListIdentitiesQuery, req);
  const filters = {
    name,
    identifierKey: identifier_key,
    identityType: identity_type,
    projectId: project_id,
  };
  res.json((await repo.listIdentities(ctx.db, filters, page)).map(identityShape));
}

const retrieveIdentityDoc: RouteDoc = { summary: 'Retrieve identity', response: IdentitySchema };

async function retrieveIdentity(
  { load }: IdentitiesContext,
  req: Request<{ identityId: string }>,
  res: Response,
) {
  res.json(identityShape(await load(req.params.identityId)));
}

const modifyIdentityDoc: RouteDoc = {
  summary: 'Modify identity',
  body: IdentityUpdateSchema,
  response: IdentitySchema,
};

async function modifyIdentity(
  { load, update }: IdentitiesContext,
  req: Request<{ identityId: string }>,
  res: Response,
) {
  await load(req.params.identityId);
  res.json(identityShape(await update(req.params.identityId, parseBody(IdentityUpdateSchema, req))));
}

const upsertIdentityPropertiesDoc: RouteDoc = {
  summary: 'Upsert identity properties',
  description: "Replaces the identity's properties with those given.",
  body: PropertiesBody,
  response: IdentitySchema,
};

async function upsertIdentityProperties(
  { ctx, load }: IdentitiesContext,
  req: Request<{ identityId: string }>,
  res: Response,
) {
  await load(req.params.identityId);
  const properties = parseBody(PropertiesBody, req);
  await repo.updateIdentity(ctx.db, req.params.identityId, { properties });
  res.json(identityShape(await load(req.params.identityId)));
}

const deleteIdentityDoc: RouteDoc = { summary: 'Delete identity' };

async function deleteIdentity(
  { ctx }: IdentitiesContext,
  req: Request<{ identityId: string }>,
  res: Response,
) {
  if (!(await repo.deleteIdentity(ctx.db, req.params.identityId)))
    throw notFound(`Identity ${req.params.identityId}`);
  res.json({});
}

const listAgentsForIdentityDoc: RouteDoc = {
  summary: 'List agents for identity',
  query: AgentsPageQuery,
  response: z.array(AgentStateSchema),
};

async function listAgentsForIdentity(
  { ctx, load }: IdentitiesContext,
  req: Request<{ identityId: string }>,
  res: Response,
) {
  await load(req.params.identityId);
  const page = parseQuery(AgentsPageQuery, req);
  const rows = await listAgentRows(ctx.db, page, { identityId: req.params.identityId });
  res.json(await agentStates(ctx.db, rows, NO_RELATIONSHIPS));
}

const listBlocksForIdentityDoc: RouteDoc = {
  summary: 'List blocks for identity',
  response: z.array(BlockSchema),
};

async function listBlocksForIdentity(
  { ctx, load }: IdentitiesContext,
  req: Request<{ identityId: string }>,
  res: Response,
) {
  const identity = await load(req.params.identityId);
  const blocks = await Promise.all(identity.block_ids.map((id) => getBlock(ctx.db, id)));
  res.json(blocks.filter((b) => b !== undefined).map(blockShape));
}
