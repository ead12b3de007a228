import type { Request, Response } from 'express';
import { z } from 'zod';
import type { ApiContext } from '../context';
import { HttpError, notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import { MessageAnswerSchema, pageQuery, stringList } from '../schemas/common';
import {
  AgentToolRunSchema,
  ToolCreateSchema,
  ToolRunFromSourceSchema,
  ToolUpdateSchema,
  SearchToolsSchema,
} from '../../schemas/tools';
import { toolExecutionShape, toolRunFromSourceShape, toolShape } from '../letta-shapes';
import {
  ToolExecutionResultSchema,
  ToolReturnMessageSchema,
  ToolSchema,
  type ToolExecutionResult,
} from '../schemas/responses';
import type { AgentRow } from '../../db/rows';
import { ToolSearchResultSchema } from '../schemas/tools';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { deleteTool, getTool, listTools, searchTools } from '../../db/tools';
import { createTool, modifyTool } from '../../tools/registry';
import { pythonSignature, ToolSchemaError, type PythonSchemaOptions } from '../../tools/python-schema';
import { getAgent } from '../../db/agents';
import { SandboxUnavailableError, type ToolJob } from '../../sandbox';
import { runCustomTool, sandboxEnvironments } from '../../tools/custom-tools';
import {
  builtinToolNames,
  ensureBuiltinTools,
  isBuiltinTool,
  restoreBuiltinTools,
  type BuiltinToolName,
  runBuiltinToolNow,
  ToolError,
} from '../../tools/builtin';
import { webSettings } from '../../tools/builtin/web-settings';
import { providerRegistry } from '../../llm';
import { runtimeFields } from '../../sandbox/node-runtime';
import { transpileTool, TypeScriptSourceError } from '../../sandbox/typescript';
import { MCP_TOOL_TYPE } from '../../mcp/tool-sync';
import { runMcpToolNow } from './mcp-servers';
import { DEFAULT_RETURN_CHAR_LIMIT, friendlyError } from '../../returns/tool-returns';

type ToolRunFromSource = z.infer<typeof ToolRunFromSourceSchema>;

/** The function to run; source that cannot run at all is the request's fault (400), as at creation. */
async function functionName(body: ToolRunFromSource, options: PythonSchemaOptions): Promise<string> {
  try {
    if (body.source_type === 'python')
      return body.name ?? (await pythonSignature(body.source_code, options)).name;
    return transpileTool(body.source_code, body.name ?? undefined).name;
  } catch (error) {
    if (error instanceof ToolSchemaError || error instanceof TypeScriptSourceError)
      throw new HttpError(400, error.message);
    throw error;
  }
}

const ListToolsQuery = pageQuery(50, 'desc').extend({
  name: z.string().optional(),
  names: stringList,
  tool_types: stringList,
  search: z.string().optional(),
});

/** Letta's tools API (routes are not strict: `/v1/tools` and `/v1/tools/` both match). */
export function toolsRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Tools');
  const on = routeTable(router, toolsContext(ctx));
  on.post('/v1/tools', createToolDoc, createOrUpsertTool(false));
  on.put('/v1/tools', upsertToolDoc, createOrUpsertTool(true));
  on.post('/v1/tools/run', runToolFromSourceDoc, runToolFromSource);
  on.post('/v1/agents/:agentId/tools/:toolName/run', runToolForAgentDoc, runToolForAgent);
  on.post('/v1/tools/add-base-tools', upsertBaseToolsDoc, upsertBaseTools);
  on.post('/v1/tools/search', searchToolsRouteDoc, searchToolsRoute);
  on.get('/v1/tools', listToolsRouteDoc, listToolsRoute);
  on.get('/v1/tools/:toolId', retrieveToolDoc, retrieveTool);
  on.patch('/v1/tools/:toolId', modifyToolRouteDoc, modifyToolRoute);
  on.delete('/v1/tools/:toolId', deleteToolRouteDoc, deleteToolRoute);

  return router;
}

/** What the routes of toolsRouter share. */
function toolsContext(ctx: ApiContext) {
  const python = { python: ctx.config.PYTHON_PATH, timeoutMs: ctx.config.SCHEMA_GENERATION_TIMEOUT_MS };

  const loadTool = async (id: string) => {
    const tool = await getTool(ctx.db, id);
    if (!tool) throw notFound(`Tool ${id}`);
    return tool;
  };

  /** A sandbox that cannot run anything is the server's problem, not the request's. */
  const execute = async <T>(run: () => Promise<T>) => {
    try {
      return await run();
    } catch (error) {
      if (error instanceof SandboxUnavailableError) throw new HttpError(503, error.message);
      throw error;
    }
  };
  return { ctx, python, loadTool, execute };
}

type ToolsContext = ReturnType<typeof toolsContext>;

const createToolDoc: RouteDoc = {
  summary: 'Create tool',
  description: 'A name in use by another tool is refused (409).',
  body: ToolCreateSchema,
  response: ToolSchema,
};

const upsertToolDoc: RouteDoc = {
  summary: 'Upsert tool',
  description: 'Replaces the tool of the same name, if any.',
  body: ToolCreateSchema,
  response: ToolSchema,
};

/** Create refuses a name in use by another tool (409); upsert replaces it. */
function createOrUpsertTool(replace: boolean) {
  return async function createToolRoute({ ctx, python }: ToolsContext, req: Request, res: Response) {
    const tool = await createTool(ctx.db, parseBody(ToolCreateSchema, req), python, { replace });
    res.json(toolShape(tool));
  };
}

const runToolFromSourceDoc: RouteDoc = {
  summary: 'Run tool from source',
  description: "Letta's ToolReturnMessage, its `tool_return` the return as Python's `str()` shows it.",
  body: ToolRunFromSourceSchema,
  response: ToolReturnMessageSchema,
};

async function runToolFromSource({ ctx, execute, python }: ToolsContext, req: Request, res: Response) {
  const body = parseBody(ToolRunFromSourceSchema, req);
  const job: ToolJob = {
    name: await functionName(body, python),
    ...runtimeFields(body),
    source: body.source_code,
    args: body.args,
    env: body.env_vars ?? {},
    timeoutMs: ctx.config.TOOL_TIMEOUT_MS,
    // Letta's ToolRunFromSource names no limit: a tool's default one.
    returnCharLimit: DEFAULT_RETURN_CHAR_LIMIT,
  };
  const result = await execute(() => ctx.sandbox.run(job));
  res.json(toolRunFromSourceShape(job.name, result, DEFAULT_RETURN_CHAR_LIMIT));
}

const runToolForAgentDoc: RouteDoc = {
  summary: 'Run tool for agent',
  description:
    "Custom, MCP and built-in tools (a built-in against the agent's memory, as in a turn; run_code and the messages to other agents run only in a turn); the return is null when the tool failed.",
  body: AgentToolRunSchema,
  response: ToolExecutionResultSchema,
  // Running code with the agent's secrets is more than its tokens grant (and a sandboxed call
  // could run itself, and so on, without end).
  scopedTokens: false,
};

async function runToolForAgent(
  { ctx, execute }: ToolsContext,
  req: Request<{ agentId: string; toolName: string }>,
  res: Response,
) {
  const agent = await getAgent(ctx.db, req.params.agentId);
  if (!agent) throw notFound(`Agent ${req.params.agentId}`);
  const tool = agent.tools.find((t) => t.name === req.params.toolName);
  if (!tool) throw notFound(`Tool ${req.params.toolName} on agent ${agent.id}`);
  const { args } = parseBody(AgentToolRunSchema, req);
  let execution: { status: string; func_return: unknown };
  if (tool.tool_type === MCP_TOOL_TYPE) execution = await runMcpToolNow(ctx, tool, args);
  else if (tool.tool_type === 'custom') {
    const call = { agent, tool, args, defaultTimeoutMs: ctx.config.TOOL_TIMEOUT_MS };
    const choices = ctx.toolSandboxes.choicesFor(tool);
    const environments = await sandboxEnvironments(ctx.db, choices);
    const { run } = await execute(() => runCustomTool(choices, environments, call, undefined, ctx.toolApi));
    execution = toolExecutionShape(run, tool.return_char_limit);
  } else if (isBuiltinTool(tool.name)) execution = await runBuiltinTool(ctx, agent, tool.name, args);
  else
    throw new HttpError(400, `Tool ${tool.name} is of type ${tool.tool_type}, which this route does not run`);
  // Letta leaves the return out when the tool failed (agents.py: run_tool_for_agent).
  res.json({ ...execution, func_return: execution.status === 'error' ? null : execution.func_return });
}

/** A built-in's run as Letta's LettaCoreToolExecutor answers it: its own failure is an error result. */
async function runBuiltinTool(
  ctx: ApiContext,
  agent: AgentRow,
  name: BuiltinToolName,
  args: Record<string, unknown>,
): Promise<ToolExecutionResult> {
  const context = {
    db: ctx.db,
    agent,
    web: webSettings(ctx.config),
    providers: providerRegistry(ctx.config),
    files: { grepPageSize: ctx.config.GREP_FILES_PAGE_SIZE },
  };
  const shape = { stdout: [], agent_state: null, sandbox_config_fingerprint: null };
  try {
    const funcReturn = await runBuiltinToolNow(context, name, args);
    return { ...shape, status: 'success', func_return: funcReturn ?? null, stderr: [] };
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    return {
      ...shape,
      status: 'error',
      func_return: null,
      stderr: [friendlyError(name, 'ValueError', error.message)],
    };
  }
}

// Letta's upsert of its built-in tools, which clients call when an agent names one a server lacks.
const upsertBaseToolsDoc: RouteDoc = { summary: 'Upsert base tools', response: z.array(ToolSchema) };

async function upsertBaseTools({ ctx }: ToolsContext, _req: Request, res: Response) {
  await ensureBuiltinTools(ctx.db);
  const names = builtinToolNames();
  const tools = await listTools(ctx.db, { names }, { limit: names.length, order: 'asc' });
  res.json(tools.map(toolShape));
}

const searchToolsRouteDoc: RouteDoc = {
  summary: 'Search tools',
  body: SearchToolsSchema,
  response: z.array(ToolSearchResultSchema),
};

async function searchToolsRoute({ ctx }: ToolsContext, req: Request, res: Response) {
  const body = parseBody(SearchToolsSchema, req);
  const found = await searchTools(
    ctx.db,
    {
      query: body.query ?? undefined,
      tags: body.tags ?? undefined,
      toolTypes: body.tool_types ?? undefined,
    },
    body.limit,
  );
  res.json(found.map(({ score, ...tool }) => ({ tool: toolShape(tool), combined_score: score })));
}

const listToolsRouteDoc: RouteDoc = {
  summary: 'List tools',
  query: ListToolsQuery,
  response: z.array(ToolSchema),
};

async function listToolsRoute({ ctx }: ToolsContext, req: Request, res: Response) {
  const query = parseQuery(ListToolsQuery, req);
  if (!query.after) await restoreBuiltinTools(ctx.db);
  const tools = await listTools(
    ctx.db,
    { name: query.name, names: query.names, toolTypes: query.tool_types, search: query.search },
    query,
  );
  res.json(tools.map(toolShape));
}

const retrieveToolDoc: RouteDoc = { summary: 'Retrieve tool', response: ToolSchema };

async function retrieveTool({ loadTool }: ToolsContext, req: Request<{ toolId: string }>, res: Response) {
  res.json(toolShape(await loadTool(req.params.toolId)));
}

const modifyToolRouteDoc: RouteDoc = { summary: 'Modify tool', body: ToolUpdateSchema, response: ToolSchema };

async function modifyToolRoute(
  { ctx, loadTool, python }: ToolsContext,
  req: Request<{ toolId: string }>,
  res: Response,
) {
  const tool = await loadTool(req.params.toolId);
  res.json(toolShape(await modifyTool(ctx.db, tool, parseBody(ToolUpdateSchema, req), python)));
}

const deleteToolRouteDoc: RouteDoc = { summary: 'Delete tool', response: MessageAnswerSchema };

async function deleteToolRoute({ ctx }: ToolsContext, req: Request<{ toolId: string }>, res: Response) {
  if (!(await deleteTool(ctx.db, req.params.toolId))) throw notFound(`Tool ${req.params.toolId}`);
  res.json({ message: `Tool id=${req.params.toolId} successfully deleted` });
}
