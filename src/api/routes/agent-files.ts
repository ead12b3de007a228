/**
 * Letta's agent files: `GET|POST /v1/agents/{agent_id}/export` answers the agent as an `.af` file, and
 * `POST /v1/agents/import` (multipart, the file in `file`) makes its agents again (src/agent/agent-file/).
 */
import { receiveFile } from '../upload';
import type { RequestHandler, Request, Response } from 'express';
import type { ApiContext } from '../context';
import { HttpError, notFound } from '../errors';
import { checkJson } from '../input-guard';
import { parseBody, parseQuery } from '../validation';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import {
  ExportAgentBody,
  ExportAgentQuery,
  ImportAgentForm,
  ImportAgentUpload,
  ImportedAgentsResponseSchema,
  type ImportedAgentsResponse,
} from '../schemas/agent-files';
import { AgentFileSchema, type ImportOptions } from '../../schemas/agent-file';
import { exportAgentFile, type ExportOptions } from '../../agent/agent-file/export';
import { importAgentFile } from '../../agent/agent-file/import';
import { getAgent } from '../../db/agents';

/** Letta's texts for a file that is not JSON, or not an agent file of today's format. */
const CORRUPTED = 'Corrupted agent file format.';
const LEGACY =
  "Legacy AgentSchema format is deprecated. Please use the new AgentFileSchema format with 'agents' field.";
const BAD_SECRETS = 'secrets must be a valid JSON string';

/** The uploaded file's JSON (Letta also takes JSON encoded twice, as a JSON string). */
function parseFile(buffer: Buffer, maxDepth: number) {
  let json: unknown;
  try {
    json = JSON.parse(buffer.toString('utf8').replace(/^\uFEFF/, ''));
    if (typeof json === 'string') json = JSON.parse(json);
  } catch {
    throw new HttpError(400, CORRUPTED);
  }
  checkJson(json, 'file', maxDepth);
  const isFile =
    json !== null && typeof json === 'object' && Array.isArray((json as { agents?: unknown }).agents);
  if (!isFile) throw new HttpError(400, LEGACY);
  const parsed = AgentFileSchema.safeParse(json);
  if (!parsed.success)
    throw new HttpError(
      422,
      parsed.error.issues.slice(0, 20).map((issue) => ({
        type: issue.code,
        loc: ['body', 'file', ...issue.path.map(String)],
        msg: issue.message,
      })),
    );
  return parsed.data;
}

/** `secrets` (or the older `env_vars_json`): a JSON object of names and values. */
function parseSecrets(text: string | undefined): Record<string, string> | undefined {
  if (text === undefined || text === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(400, BAD_SECRETS);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new HttpError(400, BAD_SECRETS);
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [key, typeof v === 'string' ? v : JSON.stringify(v)]),
  );
}

/** What the upload's form may hold besides the file. */
const AGENT_FILE_FORM = { fields: 32, fieldSize: 1024 * 1024, parts: 40 };

export function agentFilesRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Agent files');
  const on = routeTable(router, agentFilesContext(ctx));
  on.get('/v1/agents/:agentId/export', exportAgentDoc, exportAgent);
  on.post('/v1/agents/:agentId/export', exportAgentWithSkillsDoc, exportAgentWithSkills);
  on.post(
    '/v1/agents/import',
    importAgentDoc,
    receiveFile('Agent file', ctx.config.AGENT_FILE_MAX_BYTES, AGENT_FILE_FORM),
    importAgent,
  );

  return router;
}

/** What the routes of agentFilesRouter share. */
function agentFilesContext(ctx: ApiContext) {
  const python = { python: ctx.config.PYTHON_PATH, timeoutMs: ctx.config.SCHEMA_GENERATION_TIMEOUT_MS };

  const sendExport = async (agentId: string, options: ExportOptions, res: Parameters<RequestHandler>[1]) => {
    const agent = await getAgent(ctx.db, agentId);
    if (!agent) throw notFound(`Agent ${agentId}`);
    const file = await exportAgentFile(ctx.db, agent, options);
    // Letta answers it indented (IndentedORJSONResponse).
    res.type('application/json').send(JSON.stringify(file, null, 2));
  };
  return { ctx, python, sendExport };
}

type AgentFilesContext = ReturnType<typeof agentFilesContext>;

const exportAgentDoc: RouteDoc = {
  summary: 'Export agent',
  description: 'The agent as an agent file (Letta’s AgentFileSchema), indented JSON.',
  query: ExportAgentQuery,
  response: AgentFileSchema,
};

async function exportAgent(
  { sendExport }: AgentFilesContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  const query = parseQuery(ExportAgentQuery, req);
  if (query.use_legacy_format) throw new HttpError(400, 'Legacy format is not supported');
  await sendExport(
    req.params.agentId,
    { conversationId: query.conversation_id, scrubMessages: query.scrub_messages },
    res,
  );
}

const exportAgentWithSkillsDoc: RouteDoc = {
  summary: 'Export agent with skills',
  description:
    'The agent as an agent file (Letta’s AgentFileSchema), indented JSON, the given skills included.',
  body: ExportAgentBody,
  response: AgentFileSchema,
};

async function exportAgentWithSkills(
  { sendExport }: AgentFilesContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  const body = parseBody(ExportAgentBody, req);
  await sendExport(
    req.params.agentId,
    {
      conversationId: body.conversation_id,
      scrubMessages: body.scrub_messages ?? false,
      skills: body.skills ?? [],
    },
    res,
  );
}

const importAgentDoc: RouteDoc = {
  summary: 'Import agent',
  description:
    'Makes the agents of an uploaded agent file (multipart, the file in `file`). The `x-override-embedding-model` header is read as `embedding` when neither form field gives one.',
  form: ImportAgentUpload,
  response: ImportedAgentsResponseSchema,
};

async function importAgent({ ctx, python }: AgentFilesContext, req: Request, res: Response) {
  const form = parseBody(ImportAgentForm, req);
  checkJson(req.body, 'body', ctx.config.MAX_JSON_DEPTH);
  if (!req.file)
    throw new HttpError(422, [{ type: 'missing', loc: ['body', 'file'], msg: 'Field required' }]);
  const file = parseFile(req.file.buffer, ctx.config.MAX_JSON_DEPTH);
  const options: ImportOptions = {
    appendCopySuffix: form.append_copy_suffix ?? true,
    overrideExistingTools: form.override_existing_tools ?? true,
    stripMessages: form.strip_messages ?? false,
    name: form.name ?? form.override_name,
    model: form.model ?? form.override_model_handle,
    embedding: form.embedding ?? form.override_embedding_handle ?? req.get('x-override-embedding-model'),
    secrets: parseSecrets(form.secrets ?? form.env_vars_json),
  };
  const result = await importAgentFile(ctx.db, ctx.config, file, options, python);
  ctx.log.info(
    { agentIds: result.agentIds, skippedTools: result.skippedTools, repairs: result.repairs },
    'agent file imported',
  );
  res.json({ agent_ids: result.agentIds } satisfies ImportedAgentsResponse);
}
