import type { Request, Response } from 'express';
/**
 * Archival memory over HTTP, as Letta routes it: an agent's passages (`/v1/agents/{id}/archival-memory`),
 * archives of their own (`/v1/archives`) and attaching them to agents, and searches across archives
 * (`/v1/passages/search`). Passages are embedded with the agent's or the archive's embedding model;
 * without one they are kept as text, found by the words of a search (src/memory/archival.ts).
 */
import { z } from 'zod';
import type { ApiContext } from '../context';
import { notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { MessageAnswerSchema } from '../schemas/common';
import { archiveShape, passageShape } from '../letta-shapes';
import {
  ArchivalSearchResponseSchema,
  ArchiveSchema,
  PassageSchema,
  PassageSearchResultSchema,
} from '../schemas/responses';
import {
  CreateAgentPassageSchema,
  CreateArchivePassageSchema,
  CreateArchivePassagesSchema,
  CreateArchiveSchema,
  ListAgentPassagesQuery,
  ListArchivesQuery,
  SearchAgentPassagesQuery,
  SearchPassagesSchema,
  UpdateArchiveSchema,
} from '../schemas/archives';
import {
  addPassages,
  findPassages,
  insertArchival,
  searchArchival,
  type PassageInput,
} from '../../memory/archival';
import { chosenEmbedding } from '../../memory/embeddings';
import * as archives from '../../db/archives';
import { getAgentRow } from '../../db/agents';
import { newId } from '../../ids';
import { providerRegistry } from '../../llm';

export function archivesRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Archives');
  const on = routeTable(router, archivesContext(ctx));
  on.post(
    '/v1/agents/:agentId/archival-memory',
    insertPassageIntoAgentsArchivalMemoryDoc,
    insertPassageIntoAgentsArchivalMemory,
  );
  on.get(
    '/v1/agents/:agentId/archival-memory/search',
    searchAgentsArchivalMemoryDoc,
    searchAgentsArchivalMemory,
  );
  on.get('/v1/agents/:agentId/archival-memory', listAgentsArchivalMemoryDoc, listAgentsArchivalMemory);
  on.delete(
    '/v1/agents/:agentId/archival-memory/:memoryId',
    deletePassageFromAgentsArchivalMemoryDoc,
    deletePassageFromAgentsArchivalMemory,
  );

  for (const action of ['attach', 'detach'] as const)
    on.patch(
      `/v1/agents/:agentId/archives/${action}/:archiveId`,
      archiveLinkDoc(action),
      linkArchive(action),
    );
  on.post('/v1/archives', createArchiveDoc, createArchive);
  on.get('/v1/archives', listArchivesDoc, listArchives);
  on.get('/v1/archives/:archiveId', retrieveArchiveDoc, retrieveArchive);
  on.patch('/v1/archives/:archiveId', modifyArchiveDoc, modifyArchive);
  on.delete('/v1/archives/:archiveId', deleteArchiveRouteDoc, deleteArchiveRoute);
  on.post('/v1/archives/:archiveId/passages', createPassageInArchiveDoc, createPassageInArchive);
  on.post('/v1/archives/:archiveId/passages/batch', createPassagesInArchiveDoc, createPassagesInArchive);
  on.delete(
    '/v1/archives/:archiveId/passages/:passageId',
    deletePassageFromArchiveDoc,
    deletePassageFromArchive,
  );
  on.post('/v1/passages/search', searchPassagesDoc, searchPassages);

  return router;
}

/** What the routes of archivesRouter share. */
function archivesContext(ctx: ApiContext) {
  const providers = providerRegistry(ctx.config);

  const loadAgent = async (id: string) => {
    const agent = await getAgentRow(ctx.db, id);
    if (!agent) throw notFound(`Agent ${id}`);
    return agent;
  };
  const loadArchive = async (id: string) => {
    const archive = await archives.getArchive(ctx.db, id);
    if (!archive) throw notFound(`Archive ${id}`);
    return archive;
  };

  const addToArchive = async (archiveId: string, inputs: PassageInput[]) => {
    const archive = await loadArchive(archiveId);
    return (await addPassages(ctx.db, providers, archive, inputs, `Archive ${archiveId}`)).map(passageShape);
  };
  return { ctx, providers, loadAgent, loadArchive, addToArchive };
}

type ArchivesContext = ReturnType<typeof archivesContext>;

const archiveLinkDoc = (action: 'attach' | 'detach'): RouteDoc => ({
  summary: action === 'attach' ? 'Attach an archive to an agent' : 'Detach an archive from an agent',
  response: z.null(),
});

/** Attaches an archive to an agent, or detaches it, as `action` says. */
function linkArchive(action: 'attach' | 'detach') {
  return async function linkArchiveRoute(
    { ctx, loadAgent, loadArchive }: ArchivesContext,
    req: Request<{ agentId: string; archiveId: string }>,
    res: Response,
  ) {
    const { agentId, archiveId } = req.params;
    await Promise.all([loadAgent(agentId), loadArchive(archiveId)]);
    if (action === 'attach') await archives.attachArchive(ctx.db, agentId, archiveId);
    else await archives.detachArchive(ctx.db, agentId, archiveId);
    res.json(null);
  };
}

const insertPassageIntoAgentsArchivalMemoryDoc: RouteDoc = {
  summary: "Insert a passage into an agent's archival memory",
  description: 'Embedded with the agent’s embedding model; answers the passages made.',
  body: CreateAgentPassageSchema,
  response: z.array(PassageSchema),
};

async function insertPassageIntoAgentsArchivalMemory(
  { ctx, loadAgent, providers }: ArchivesContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  const agent = await loadAgent(req.params.agentId);
  const body = parseBody(CreateAgentPassageSchema, req);
  res.json((await insertArchival(ctx.db, providers, agent, body)).map(passageShape));
}

const searchAgentsArchivalMemoryDoc: RouteDoc = {
  summary: "Search an agent's archival memory",
  query: SearchAgentPassagesQuery,
  response: ArchivalSearchResponseSchema,
};

async function searchAgentsArchivalMemory(
  { ctx, loadAgent, providers }: ArchivesContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  const agent = await loadAgent(req.params.agentId);
  const results = await searchArchival(ctx.db, providers, agent, parseQuery(SearchAgentPassagesQuery, req));
  res.json({ results, count: results.length });
}

const listAgentsArchivalMemoryDoc: RouteDoc = {
  summary: "List an agent's archival memory",
  query: ListAgentPassagesQuery,
  response: z.array(PassageSchema),
};

async function listAgentsArchivalMemory(
  { ctx, loadAgent }: ArchivesContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  const agentId = req.params.agentId;
  await loadAgent(agentId);
  const { ascending, ...page } = parseQuery(ListAgentPassagesQuery, req);
  const rows = await archives.listPassages(
    ctx.db,
    { agentId },
    { ...page, order: ascending ? 'asc' : 'desc' },
  );
  res.json(rows.map(passageShape));
}

const deletePassageFromAgentsArchivalMemoryDoc: RouteDoc = {
  summary: "Delete a passage from an agent's archival memory",
  response: MessageAnswerSchema,
};

async function deletePassageFromAgentsArchivalMemory(
  { ctx, loadAgent }: ArchivesContext,
  req: Request<{ agentId: string; memoryId: string }>,
  res: Response,
) {
  const { agentId, memoryId } = req.params;
  await loadAgent(agentId);
  if (!(await archives.deletePassage(ctx.db, { agentId }, memoryId))) throw notFound(`Passage ${memoryId}`);
  res.json({ message: `Memory id=${memoryId} successfully deleted` });
}

const createArchiveDoc: RouteDoc = {
  summary: 'Create an archive',
  body: CreateArchiveSchema,
  response: ArchiveSchema,
};

async function createArchive({ ctx }: ArchivesContext, req: Request, res: Response) {
  const body = parseBody(CreateArchiveSchema, req);
  const archive = await archives.insertArchive(ctx.db, newId('archive'), {
    name: body.name,
    description: body.description ?? null,
    embedding_config: chosenEmbedding(body, ctx.config),
    metadata: null,
  });
  res.json(archiveShape(archive));
}

const listArchivesDoc: RouteDoc = {
  summary: 'List archives',
  query: ListArchivesQuery,
  response: z.array(ArchiveSchema),
};

async function listArchives({ ctx }: ArchivesContext, req: Request, res: Response) {
  const { name, agent_id, ...page } = parseQuery(ListArchivesQuery, req);
  res.json((await archives.listArchives(ctx.db, { name, agentId: agent_id }, page)).map(archiveShape));
}

const retrieveArchiveDoc: RouteDoc = { summary: 'Retrieve an archive', response: ArchiveSchema };

async function retrieveArchive(
  { loadArchive }: ArchivesContext,
  req: Request<{ archiveId: string }>,
  res: Response,
) {
  res.json(archiveShape(await loadArchive(req.params.archiveId)));
}

const modifyArchiveDoc: RouteDoc = {
  summary: 'Modify an archive',
  body: UpdateArchiveSchema,
  response: ArchiveSchema,
};

async function modifyArchive(
  { ctx, loadArchive }: ArchivesContext,
  req: Request<{ archiveId: string }>,
  res: Response,
) {
  const archiveId = req.params.archiveId;
  await loadArchive(archiveId);
  const { name, description } = parseBody(UpdateArchiveSchema, req);
  await archives.updateArchive(ctx.db, archiveId, { name: name ?? undefined, description });
  res.json(archiveShape(await loadArchive(archiveId)));
}

const deleteArchiveRouteDoc: RouteDoc = { summary: 'Delete an archive', noContent: true };

async function deleteArchiveRoute(
  { ctx }: ArchivesContext,
  req: Request<{ archiveId: string }>,
  res: Response,
) {
  const archiveId = req.params.archiveId;
  if (!(await archives.deleteArchive(ctx.db, archiveId))) throw notFound(`Archive ${archiveId}`);
  res.status(204).end();
}

const createPassageInArchiveDoc: RouteDoc = {
  summary: 'Create a passage in an archive',
  body: CreateArchivePassageSchema,
  response: PassageSchema,
};

async function createPassageInArchive(
  { addToArchive }: ArchivesContext,
  req: Request<{ archiveId: string }>,
  res: Response,
) {
  const [passage] = await addToArchive(req.params.archiveId, [parseBody(CreateArchivePassageSchema, req)]);
  res.json(passage);
}

const createPassagesInArchiveDoc: RouteDoc = {
  summary: 'Create passages in an archive',
  body: CreateArchivePassagesSchema,
  response: z.array(PassageSchema),
};

async function createPassagesInArchive(
  { addToArchive }: ArchivesContext,
  req: Request<{ archiveId: string }>,
  res: Response,
) {
  res.json(await addToArchive(req.params.archiveId, parseBody(CreateArchivePassagesSchema, req).passages));
}

const deletePassageFromArchiveDoc: RouteDoc = {
  summary: 'Delete a passage from an archive',
  noContent: true,
};

async function deletePassageFromArchive(
  { ctx, loadArchive }: ArchivesContext,
  req: Request<{ archiveId: string; passageId: string }>,
  res: Response,
) {
  const { archiveId, passageId } = req.params;
  await loadArchive(archiveId);
  if (!(await archives.deletePassage(ctx.db, { archiveId }, passageId)))
    throw notFound(`Passage ${passageId}`);
  res.status(204).end();
}

const searchPassagesDoc: RouteDoc = {
  summary: 'Search passages',
  description:
    "Across the archives attached to `agent_id`, else those of `archive_id`, else every archive (folders' " +
    'files aside), best match first. Each passage is compared with the query embedded by its own ' +
    'embedding model; passages kept without an embedding match when their text holds the query (score ' +
    '0). Without a query: every passage that passes the filters, oldest first.',
  body: SearchPassagesSchema,
  response: z.array(PassageSearchResultSchema),
};

async function searchPassages(
  { ctx, loadAgent, loadArchive, providers }: ArchivesContext,
  req: Request,
  res: Response,
) {
  const body = parseBody(SearchPassagesSchema, req);
  const scope = body.agent_id
    ? { agentId: (await loadAgent(body.agent_id)).id }
    : body.archive_id
      ? { archiveId: (await loadArchive(body.archive_id)).id }
      : { everyArchive: true as const };
  const found = await findPassages(ctx.db, providers, scope, {
    query: body.query,
    tags: body.tags ?? undefined,
    tagMatchMode: body.tag_match_mode,
    limit: body.limit,
    start: body.start_date ?? undefined,
    end: body.end_date ?? undefined,
  });
  res.json(found.map(({ score, ...passage }) => ({ passage: passageShape(passage), score, metadata: {} })));
}
