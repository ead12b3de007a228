import type { Request, Response } from 'express';
/**
 * Letta's blocks API (routers/v1/blocks.py) and attaching blocks to agents: one block, shared by every
 * agent it is attached to (src/agent/blocks.ts).
 */
import { z } from 'zod';
import type { ApiContext } from '../context';
import { notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import { blockShape, type AgentRelationship } from '../letta-shapes';
import { agentState, agentStates } from '../agent-state';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { AgentStateSchema, BlockSchema } from '../schemas/responses';
import { pageQuery, queryBoolean, stringList } from '../schemas/common';
import { CreateBlockSchema, UpdateBlockSchema } from '../../schemas/agents';
import { attachBlock, changeBlock, loadBlock, newBlock } from '../../agent/blocks';
import * as repo from '../../db/blocks';
import { getAgent } from '../../db/agents';

const ListBlocksQuery = pageQuery(50, 'desc').extend({
  label: z.string().optional(),
  label_search: z.string().optional(),
  description_search: z.string().optional(),
  tags: stringList,
  match_all_tags: queryBoolean,
});

/** Agent states in lists carry no relationships, as Letta's 1.x clients get them. */
const NO_RELATIONSHIPS: ReadonlySet<AgentRelationship> = new Set();

export function blocksRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Blocks');
  const on = routeTable(router, blocksContext(ctx));
  on.post('/v1/blocks', createBlockDoc, createBlock);
  on.get('/v1/blocks', listBlocksDoc, listBlocks);
  on.get('/v1/blocks/:blockId', retrieveBlockDoc, retrieveBlock);
  on.patch('/v1/blocks/:blockId', modifyBlockDoc, modifyBlock);
  on.delete('/v1/blocks/:blockId', deleteBlockRouteDoc, deleteBlockRoute);
  on.get('/v1/blocks/:blockId/agents', listAgentsOfBlockDoc, listAgentsOfBlock);
  on.patch(
    '/v1/agents/:agentId/core-memory/blocks/attach/:blockId',
    attachBlockToAgentDoc,
    attachBlockToAgent,
  );
  on.patch(
    '/v1/agents/:agentId/core-memory/blocks/detach/:blockId',
    detachBlockFromAgentDoc,
    detachBlockFromAgent,
  );

  return router;
}

/** What the routes of blocksRouter share. */
function blocksContext(ctx: ApiContext) {
  const stateOf = async (agentId: string) => {
    const agent = await getAgent(ctx.db, agentId);
    if (!agent) throw notFound(`Agent ${agentId}`);
    return agentState(ctx.db, agent);
  };
  return { ctx, stateOf };
}

type BlocksContext = ReturnType<typeof blocksContext>;

const createBlockDoc: RouteDoc = {
  summary: 'Create a block',
  body: CreateBlockSchema,
  response: BlockSchema,
};

async function createBlock({ ctx }: BlocksContext, req: Request, res: Response) {
  const id = await repo.insertBlock(ctx.db, newBlock(parseBody(CreateBlockSchema, req)));
  res.json(blockShape(await loadBlock(ctx.db, id)));
}

const listBlocksDoc: RouteDoc = {
  summary: 'List blocks',
  query: ListBlocksQuery,
  response: z.array(BlockSchema),
};

async function listBlocks({ ctx }: BlocksContext, req: Request, res: Response) {
  const { label, label_search, description_search, tags, match_all_tags, ...page } = parseQuery(
    ListBlocksQuery,
    req,
  );
  const filters = {
    label,
    labelSearch: label_search,
    descriptionSearch: description_search,
    tags,
    matchAllTags: match_all_tags,
  };
  res.json((await repo.listBlocks(ctx.db, filters, page)).map(blockShape));
}

const retrieveBlockDoc: RouteDoc = { summary: 'Retrieve a block', response: BlockSchema };

async function retrieveBlock({ ctx }: BlocksContext, req: Request<{ blockId: string }>, res: Response) {
  res.json(blockShape(await loadBlock(ctx.db, req.params.blockId)));
}

const modifyBlockDoc: RouteDoc = {
  summary: 'Modify a block',
  body: UpdateBlockSchema,
  response: BlockSchema,
};

async function modifyBlock({ ctx }: BlocksContext, req: Request<{ blockId: string }>, res: Response) {
  const block = await loadBlock(ctx.db, req.params.blockId);
  res.json(blockShape(await changeBlock(ctx.db, block, parseBody(UpdateBlockSchema, req))));
}

const deleteBlockRouteDoc: RouteDoc = { summary: 'Delete a block' };

async function deleteBlockRoute({ ctx }: BlocksContext, req: Request<{ blockId: string }>, res: Response) {
  if (!(await repo.deleteBlock(ctx.db, req.params.blockId))) throw notFound(`Block ${req.params.blockId}`);
  res.json({});
}

const listAgentsOfBlockDoc: RouteDoc = {
  summary: 'List the agents a block is attached to',
  query: pageQuery(50, 'desc'),
  response: z.array(AgentStateSchema),
};

async function listAgentsOfBlock({ ctx }: BlocksContext, req: Request<{ blockId: string }>, res: Response) {
  await loadBlock(ctx.db, req.params.blockId);
  const agents = await repo.agentsOfBlock(ctx.db, req.params.blockId, parseQuery(pageQuery(50, 'desc'), req));
  res.json(await agentStates(ctx.db, agents, NO_RELATIONSHIPS));
}

const attachBlockToAgentDoc: RouteDoc = {
  summary: 'Attach a block to an agent',
  response: AgentStateSchema,
};

async function attachBlockToAgent(
  { ctx, stateOf }: BlocksContext,
  req: Request<{ agentId: string; blockId: string }>,
  res: Response,
) {
  await attachBlock(ctx.db, req.params.agentId, req.params.blockId);
  res.json(await stateOf(req.params.agentId));
}

const detachBlockFromAgentDoc: RouteDoc = {
  summary: 'Detach a block from an agent',
  response: AgentStateSchema,
};

async function detachBlockFromAgent(
  { ctx, stateOf }: BlocksContext,
  req: Request<{ agentId: string; blockId: string }>,
  res: Response,
) {
  const { agentId, blockId } = req.params;
  await loadBlock(ctx.db, blockId);
  await stateOf(agentId);
  await repo.detachBlock(ctx.db, agentId, blockId);
  res.json(await stateOf(agentId));
}
