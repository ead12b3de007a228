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
import { documentedRouter, type DocumentedRouter } from '../route-book';
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

  const stateOf = async (agentId: string) => {
    const agent = await getAgent(ctx.db, agentId);
    if (!agent) throw notFound(`Agent ${agentId}`);
    return agentState(ctx.db, agent);
  };

  router.post(
    '/v1/blocks',
    { summary: 'Create a block', body: CreateBlockSchema, response: BlockSchema },
    async (req, res) => {
      const id = await repo.insertBlock(ctx.db, newBlock(parseBody(CreateBlockSchema, req)));
      res.json(blockShape(await loadBlock(ctx.db, id)));
    },
  );

  router.get(
    '/v1/blocks',
    { summary: 'List blocks', query: ListBlocksQuery, response: z.array(BlockSchema) },
    async (req, res) => {
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
    },
  );

  router.get(
    '/v1/blocks/:blockId',
    { summary: 'Retrieve a block', response: BlockSchema },
    async (req, res) => {
      res.json(blockShape(await loadBlock(ctx.db, req.params.blockId)));
    },
  );

  router.patch(
    '/v1/blocks/:blockId',
    { summary: 'Modify a block', body: UpdateBlockSchema, response: BlockSchema },
    async (req, res) => {
      const block = await loadBlock(ctx.db, req.params.blockId);
      res.json(blockShape(await changeBlock(ctx.db, block, parseBody(UpdateBlockSchema, req))));
    },
  );

  router.delete('/v1/blocks/:blockId', { summary: 'Delete a block' }, async (req, res) => {
    if (!(await repo.deleteBlock(ctx.db, req.params.blockId))) throw notFound(`Block ${req.params.blockId}`);
    res.json({});
  });

  router.get(
    '/v1/blocks/:blockId/agents',
    {
      summary: 'List the agents a block is attached to',
      query: pageQuery(50, 'desc'),
      response: z.array(AgentStateSchema),
    },
    async (req, res) => {
      await loadBlock(ctx.db, req.params.blockId);
      const agents = await repo.agentsOfBlock(
        ctx.db,
        req.params.blockId,
        parseQuery(pageQuery(50, 'desc'), req),
      );
      res.json(await agentStates(ctx.db, agents, NO_RELATIONSHIPS));
    },
  );

  router.patch(
    '/v1/agents/:agentId/core-memory/blocks/attach/:blockId',
    { summary: 'Attach a block to an agent', response: AgentStateSchema },
    async (req, res) => {
      await attachBlock(ctx.db, req.params.agentId, req.params.blockId);
      res.json(await stateOf(req.params.agentId));
    },
  );

  router.patch(
    '/v1/agents/:agentId/core-memory/blocks/detach/:blockId',
    { summary: 'Detach a block from an agent', response: AgentStateSchema },
    async (req, res) => {
      const { agentId, blockId } = req.params;
      await loadBlock(ctx.db, blockId);
      await stateOf(agentId);
      await repo.detachBlock(ctx.db, agentId, blockId);
      res.json(await stateOf(agentId));
    },
  );

  return router;
}
