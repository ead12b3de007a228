import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import type { ApiContext } from '../context';
import { notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import { pageQuery, stringList } from '../schemas/common';
import { ToolCreateSchema, ToolUpdateSchema } from '../schemas/tools';
import { toolShape } from '../letta-shapes';
import { deleteTool, getTool, listTools } from '../../db/tools';
import { createOrUpdateTool, modifyTool } from '../../tools/registry';

const ListToolsQuery = pageQuery(50, 'desc').extend({
  name: z.string().optional(),
  names: stringList,
  tool_types: stringList,
  search: z.string().optional(),
});

/** Letta's tools API (routes are not strict: `/v1/tools` and `/v1/tools/` both match). */
export function toolsRouter(ctx: ApiContext): Router {
  const router = Router();
  const python = { python: ctx.config.PYTHON_PATH, timeoutMs: ctx.config.SCHEMA_GENERATION_TIMEOUT_MS };

  const loadTool = async (id: string) => {
    const tool = await getTool(ctx.db, id);
    if (!tool) throw notFound(`Tool ${id}`);
    return tool;
  };

  // Create and upsert are the same in Letta: the tool of the schema's name is updated if it exists.
  const upsert: RequestHandler = async (req, res) => {
    res.json(toolShape(await createOrUpdateTool(ctx.db, parseBody(ToolCreateSchema, req), python)));
  };
  router.post('/v1/tools', upsert);
  router.put('/v1/tools', upsert);

  router.get('/v1/tools', async (req, res) => {
    const query = parseQuery(ListToolsQuery, req);
    const tools = await listTools(
      ctx.db,
      { name: query.name, names: query.names, toolTypes: query.tool_types, search: query.search },
      query,
    );
    res.json(tools.map(toolShape));
  });

  router.get('/v1/tools/:toolId', async (req, res) => {
    res.json(toolShape(await loadTool(req.params.toolId)));
  });

  router.patch('/v1/tools/:toolId', async (req, res) => {
    const tool = await loadTool(req.params.toolId);
    res.json(toolShape(await modifyTool(ctx.db, tool, parseBody(ToolUpdateSchema, req), python)));
  });

  router.delete('/v1/tools/:toolId', async (req, res) => {
    if (!(await deleteTool(ctx.db, req.params.toolId))) throw notFound(`Tool ${req.params.toolId}`);
    res.json({ message: `Tool id=${req.params.toolId} successfully deleted` });
  });

  return router;
}
