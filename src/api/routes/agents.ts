import type { Request, Response } from 'express';
import { deleteAgentSchedules } from '../../agent/schedules';
import { z } from 'zod';
import type { ApiContext } from '../context';
import { HttpError, notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import { CreateAgentSchema, UpdateAgentSchema, UpdateBlockSchema } from '../../schemas/agents';
import { MessageAnswerSchema, pageQuery, queryBoolean, queryList, stringList } from '../schemas/common';
import {
  AGENT_RELATIONSHIPS,
  ALL_RELATIONSHIPS,
  blockShape,
  toolShape,
  type AgentRelationship,
} from '../letta-shapes';
import * as repo from '../../db/agents';
import { changeBlock } from '../../agent/blocks';
import { attachTool, createAgent, detachTool, resetMessages, updateAgent } from '../../agent/agents';
import { getTool } from '../../db/tools';
import type { AgentRecord } from '../../db/rows';
import { approvalPolicyFields, type ToolRule } from '../../schemas/tool-rules';
import { agentState, agentStates } from '../agent-state';
import { pageOfList } from '../paging';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { checkTokenAgentBody, principalOf } from '../scoped-access';
import { adoptCreatedAgent } from '../../access/access-tokens';
import { AgentStateSchema, BlockSchema, ToolSchema } from '../schemas/responses';

const IncludeQuery = z.object({ include: queryList(z.enum(AGENT_RELATIONSHIPS)) });

const ListAgentsQuery = pageQuery(50, 'desc').extend(IncludeQuery.shape).extend({
  name: z.string().optional(),
  identity_id: z.string().optional(),
  tags: stringList,
  match_all_tags: queryBoolean,
});

async function loadAgent(ctx: ApiContext, id: string): Promise<AgentRecord> {
  const agent = await repo.getAgent(ctx.db, id);
  if (!agent) throw notFound(`Agent ${id}`);
  return agent;
}

/**
 * Which relationships a read returns. Letta answers its 1.x SDKs (a Stainless header, or no
 * User-Agent) with only those named in `include=`, and older clients with all of them.
 */
function includedRelationships(
  req: Request,
  include: AgentRelationship[] | undefined,
): ReadonlySet<AgentRelationship> {
  if (include) return new Set(include);
  return isModernSdk(req) ? new Set() : ALL_RELATIONSHIPS;
}

/** Letta's `is_1_0_sdk_version`: a Stainless header, or no User-Agent at all. */
const isModernSdk = (req: Request) =>
  Object.keys(req.headers).some((h) => h.startsWith('x-stainless-')) || !req.get('user-agent');

/** Letta's `query_text` is the deprecated name of `name`, which wins when both are given. */
const ListTagsQuery = pageQuery(50, 'asc').extend({
  name: z.string().optional(),
  query_text: z.string().optional(),
});

/**
 * `requires_approval` from the body, the TS client's `body_requires_approval`, or the query; with it,
 * this server's policy fields (an extension of Letta's rule).
 */
const ApprovalSettingBody = z
  .object({
    requires_approval: z.boolean().optional(),
    body_requires_approval: z.boolean().optional(),
    ...approvalPolicyFields,
  })
  .strict();
const ApprovalSettingQuery = z.object({ requires_approval: queryBoolean });

/** A page of the tools or blocks an agent has. */
const AttachedPageQuery = pageQuery(1000, 'asc');

/** What deleting an agent answers, as Letta does. */

const MODERN_SDK_NULL =
  'Letta answers its 1.x SDKs (a Stainless header, or no User-Agent) with null, and older clients with the agent.';

/** Agents and their core-memory blocks (routes are not strict: `/v1/agents` and `/v1/agents/` both match). */
export function agentsRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Agents');
  const on = routeTable(router, agentsContext(ctx));
  on.post('/v1/agents', createAgentRouteDoc, createAgentRoute);
  on.get('/v1/agents', listAgentsDoc, listAgents);
  on.get('/v1/agents/:agentId', retrieveAgentDoc, retrieveAgent);
  on.patch('/v1/agents/:agentId', modifyAgentDoc, modifyAgent);
  on.delete('/v1/agents/:agentId', deleteAgentDoc, deleteAgent);
  on.patch('/v1/agents/:agentId/tools/approval/:toolName', modifyApprovalForToolDoc, modifyApprovalForTool);
  on.patch('/v1/agents/:agentId/tools/attach/:toolId', attachToolToAgentDoc, attachToolToAgent);
  on.patch('/v1/agents/:agentId/tools/detach/:toolId', detachToolFromAgentDoc, detachToolFromAgent);
  on.get('/v1/agents/:agentId/tools', listToolsForAgentDoc, listToolsForAgent);
  on.patch('/v1/agents/:agentId/reset-messages', resetMessagesRouteDoc, resetMessagesRoute);
  on.get('/v1/tags', listTagsDoc, listTags);
  on.get('/v1/agents/:agentId/core-memory/blocks', listCoreMemoryBlocksDoc, listCoreMemoryBlocks);
  on.get(
    '/v1/agents/:agentId/core-memory/blocks/:blockLabel',
    retrieveCoreMemoryBlockDoc,
    retrieveCoreMemoryBlock,
  );
  on.patch(
    '/v1/agents/:agentId/core-memory/blocks/:blockLabel',
    modifyCoreMemoryBlockDoc,
    modifyCoreMemoryBlock,
  );

  return router;
}

/** What the routes of agentsRouter share. */
function agentsContext(ctx: ApiContext) {
  const state = (agent: AgentRecord, include?: ReadonlySet<AgentRelationship>) =>
    agentState(ctx.db, agent, include);

  const loadTool = async (id: string) => {
    const tool = await getTool(ctx.db, id);
    if (!tool) throw notFound(`Tool ${id}`);
    return tool;
  };

  // Letta answers its 1.x SDKs with null from attach and detach, and older clients with the agent.
  const afterToolChange = async (req: Request, agentId: string) =>
    isModernSdk(req) ? null : state(await loadAgent(ctx, agentId));
  return { ctx, state, loadTool, afterToolChange };
}

type AgentsContext = ReturnType<typeof agentsContext>;

const createAgentRouteDoc: RouteDoc = {
  summary: 'Create agent',
  body: CreateAgentSchema,
  response: AgentStateSchema,
  callsCreateAgents: true,
};

async function createAgentRoute({ ctx, state }: AgentsContext, req: Request, res: Response) {
  const body = parseBody(CreateAgentSchema, req);
  const principal = principalOf(res);
  const caller = principal.kind === 'token' ? principal.grant.caller : undefined;
  // A call's new agent may have its caller's tags, no others.
  if (caller) checkTokenAgentBody(res, body, (await repo.getAgentRow(ctx.db, caller.agentId))?.tags ?? []);
  const agent = await createAgent(ctx.db, ctx.config, body);
  if (principal.kind === 'token') await adoptCreatedAgent(ctx.db, principal.grant, agent.id);
  res.json(await state(agent));
}

const listAgentsDoc: RouteDoc = {
  summary: 'List agents',
  description:
    'Without `include`, Letta’s 1.x SDKs get the agents without their relationships, and older clients with all of them.',
  query: ListAgentsQuery,
  response: z.array(AgentStateSchema),
};

async function listAgents({ ctx }: AgentsContext, req: Request, res: Response) {
  const query = parseQuery(ListAgentsQuery, req);
  const rows = await repo.listAgentRows(ctx.db, query, {
    name: query.name,
    tags: query.tags,
    matchAllTags: query.match_all_tags,
    identityId: query.identity_id,
  });
  res.json(await agentStates(ctx.db, rows, includedRelationships(req, query.include)));
}

const retrieveAgentDoc: RouteDoc = {
  summary: 'Retrieve agent',
  description:
    'Without `include`, Letta’s 1.x SDKs get the agent without its relationships, and older clients with all of them.',
  query: IncludeQuery,
  response: AgentStateSchema,
};

async function retrieveAgent(
  { ctx, state }: AgentsContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  const { include } = parseQuery(IncludeQuery, req);
  res.json(await state(await loadAgent(ctx, req.params.agentId), includedRelationships(req, include)));
}

const modifyAgentDoc: RouteDoc = {
  summary: 'Modify agent',
  body: UpdateAgentSchema,
  response: AgentStateSchema,
};

async function modifyAgent({ ctx, state }: AgentsContext, req: Request<{ agentId: string }>, res: Response) {
  const agent = await loadAgent(ctx, req.params.agentId);
  const body = parseBody(UpdateAgentSchema, req);
  checkTokenAgentBody(res, body, agent.tags);
  res.json(await state(await updateAgent(ctx.db, ctx.config, agent, body)));
}

const deleteAgentDoc: RouteDoc = { summary: 'Delete agent', response: MessageAnswerSchema };

async function deleteAgent({ ctx }: AgentsContext, req: Request<{ agentId: string }>, res: Response) {
  // Its schedules first: a firing must not find the agent gone.
  await deleteAgentSchedules(ctx, req.params.agentId);
  if (!(await repo.deleteAgent(ctx.db, req.params.agentId))) throw notFound(`Agent ${req.params.agentId}`);
  res.json({ message: `Agent id=${req.params.agentId} successfully deleted` });
}

const modifyApprovalForToolDoc: RouteDoc = {
  summary: 'Modify approval for tool',
  description:
    '`requires_approval` in the body (or `body_requires_approval`, as the TypeScript client sends it), ' +
    'or in the query (deprecated in Letta). Extension beyond Letta, with `requires_approval` true: ' +
    '`when`, conditions on the call\'s arguments (`{"argument", "op", "value"}`, op one of eq, ne, gt, ' +
    'gte, lt, lte, in, not_in, matches, starts_with, outside_folder): the call waits when any is met, ' +
    "and runs without a pause otherwise; `approval_timeout_seconds`, this tool's approval timeout " +
    "(over the request's and the agent's); `reminder_after_seconds`, when an `approval_reminder` " +
    `notice goes out. ${MODERN_SDK_NULL}`,
  body: ApprovalSettingBody,
  query: ApprovalSettingQuery,
  response: AgentStateSchema.nullable(),
};

async function modifyApprovalForTool(
  { ctx, state }: AgentsContext,
  req: Request<{ agentId: string; toolName: string }>,
  res: Response,
) {
  const agent = await loadAgent(ctx, req.params.agentId);
  const body = parseBody(ApprovalSettingBody, req);
  const required =
    body.requires_approval ??
    body.body_requires_approval ??
    parseQuery(ApprovalSettingQuery, req).requires_approval;
  if (required === undefined)
    throw new HttpError(422, 'requires_approval must be given in the body or the query');
  const { when, approval_timeout_seconds, reminder_after_seconds } = body;
  const policy = { when, approval_timeout_seconds, reminder_after_seconds };
  if (!required && Object.values(policy).some((field) => field != null))
    throw new HttpError(
      422,
      'when, approval_timeout_seconds and reminder_after_seconds need requires_approval',
    );
  const { toolName } = req.params;
  if (!agent.tools.some((t) => t.name === toolName)) throw notFound(`Tool ${toolName} on agent ${agent.id}`);
  const others = agent.tool_rules.filter(
    (r) => !(r.type === 'requires_approval' && r.tool_name === toolName),
  );
  const rules: ToolRule[] = required
    ? [...others, { type: 'requires_approval', tool_name: toolName, ...policy }]
    : others;
  await repo.updateAgentRow(ctx.db, agent.id, { tool_rules: rules });
  // Letta answers its 1.x SDKs with null here, and older clients with the agent.
  res.json(isModernSdk(req) ? null : await state(await loadAgent(ctx, agent.id)));
}

const attachToolToAgentDoc: RouteDoc = {
  summary: 'Attach tool to agent',
  description: MODERN_SDK_NULL,
  response: AgentStateSchema.nullable(),
};

async function attachToolToAgent(
  { afterToolChange, ctx, loadTool }: AgentsContext,
  req: Request<{ agentId: string; toolId: string }>,
  res: Response,
) {
  const agent = await loadAgent(ctx, req.params.agentId);
  await attachTool(ctx.db, agent, await loadTool(req.params.toolId));
  res.json(await afterToolChange(req, agent.id));
}

const detachToolFromAgentDoc: RouteDoc = {
  summary: 'Detach tool from agent',
  description: MODERN_SDK_NULL,
  response: AgentStateSchema.nullable(),
};

async function detachToolFromAgent(
  { afterToolChange, ctx, loadTool }: AgentsContext,
  req: Request<{ agentId: string; toolId: string }>,
  res: Response,
) {
  const agent = await loadAgent(ctx, req.params.agentId);
  await detachTool(ctx.db, agent.id, (await loadTool(req.params.toolId)).id);
  res.json(await afterToolChange(req, agent.id));
}

const listToolsForAgentDoc: RouteDoc = {
  summary: 'List tools for agent',
  query: AttachedPageQuery,
  response: z.array(ToolSchema),
};

async function listToolsForAgent({ ctx }: AgentsContext, req: Request<{ agentId: string }>, res: Response) {
  const { tools } = await loadAgent(ctx, req.params.agentId);
  res.json(pageOfList(tools, parseQuery(AttachedPageQuery, req)).map(toolShape));
}

// Letta's reset-messages: the agent's own history is emptied but its system message.
const resetMessagesRouteDoc: RouteDoc = {
  summary: 'Reset messages',
  description: 'Empties the agent’s own history but its system message.',
  response: AgentStateSchema,
};

async function resetMessagesRoute(
  { ctx, state }: AgentsContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  await loadAgent(ctx, req.params.agentId);
  await resetMessages(ctx.db, { agentId: req.params.agentId, conversationId: null });
  res.json(await state(await loadAgent(ctx, req.params.agentId), includedRelationships(req, undefined)));
}

// Letta's tags API: the tags agents have.
const listTagsDoc: RouteDoc = {
  summary: 'List tags',
  description: 'The tags agents have.',
  query: ListTagsQuery,
  response: z.array(z.string()),
};

async function listTags({ ctx }: AgentsContext, req: Request, res: Response) {
  const { name, query_text, ...page } = parseQuery(ListTagsQuery, req);
  res.json(await repo.agentTags(ctx.db, { name: name ?? query_text }, page));
}

const listCoreMemoryBlocksDoc: RouteDoc = {
  summary: 'List core memory blocks',
  query: AttachedPageQuery,
  response: z.array(BlockSchema),
};

async function listCoreMemoryBlocks(
  { ctx }: AgentsContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  const { blocks } = await loadAgent(ctx, req.params.agentId);
  res.json(pageOfList(blocks, parseQuery(AttachedPageQuery, req)).map(blockShape));
}

const retrieveCoreMemoryBlockDoc: RouteDoc = { summary: 'Retrieve core memory block', response: BlockSchema };

async function retrieveCoreMemoryBlock(
  { ctx }: AgentsContext,
  req: Request<{ agentId: string; blockLabel: string }>,
  res: Response,
) {
  const agent = await loadAgent(ctx, req.params.agentId);
  const block = agent.blocks.find((b) => b.label === req.params.blockLabel);
  if (!block) throw notFound(`Block with label ${req.params.blockLabel}`);
  res.json(blockShape(block));
}

const modifyCoreMemoryBlockDoc: RouteDoc = {
  summary: 'Modify core memory block',
  body: UpdateBlockSchema,
  response: BlockSchema,
};

async function modifyCoreMemoryBlock(
  { ctx }: AgentsContext,
  req: Request<{ agentId: string; blockLabel: string }>,
  res: Response,
) {
  const agent = await loadAgent(ctx, req.params.agentId);
  const block = agent.blocks.find((b) => b.label === req.params.blockLabel);
  if (!block) throw notFound(`Block with label ${req.params.blockLabel}`);
  const updated = await changeBlock(ctx.db, block, parseBody(UpdateBlockSchema, req));
  res.json(blockShape(updated));
}
