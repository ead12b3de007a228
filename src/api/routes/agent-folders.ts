/**
 * An agent's folders and files, as Letta routes them: `agents.folders.attach / detach / list`,
 * `agents.files.list / open / close / closeAll`, and the legacy `/v1/agents/{id}/sources/...` paths.
 * Attaching a folder gives the agent the file tools and opens its files (src/memory/file-views.ts).
 */
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { ApiContext } from '../context';
import { notFound } from '../errors';
import { parseQuery } from '../validation';
import { MessageAnswerSchema, pageQuery, queryBoolean } from '../schemas/common';
import { agentFileShape, folderShape } from '../letta-shapes';
import { agentState } from '../agent-state';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { AgentStateSchema } from '../schemas/responses';
import { FolderSchema } from '../schemas/folders';
import { PaginatedAgentFilesSchema, type PaginatedAgentFiles } from '../schemas/agent-folders';
import { getAgent } from '../../db/agents';
import * as views from '../../db/file-agents';
import {
  attachFolderToAgent,
  chunkFile,
  detachFolderFromAgent,
  fileLimits,
  openFileView,
  truncateVisibleContent,
  withAgentFiles,
} from '../../memory/file-views';

const ListAgentFoldersQuery = pageQuery(100, 'desc');

const MODERN_SDK_NULL =
  'Letta answers its 1.x SDKs (a Stainless header, or no User-Agent) with null, and older clients with the agent.';

/** What closing a file answers, as Letta does. */

/** The names of the files closed (to keep within the agent's open-file limit, or by close-all). */
const ClosedFileNames = z.array(z.string());

const ListAgentFilesQuery = pageQuery(100, 'desc').extend({
  order_by: z.literal('created_at').optional(),
  /** Deprecated in Letta: the `after` of the previous page. */
  cursor: z.string().optional(),
  is_open: queryBoolean.optional(),
});

/** Letta's `is_1_0_sdk_version`: a Stainless header, or no User-Agent at all. */
const isModernSdk = (req: Request) =>
  Object.keys(req.headers).some((h) => h.startsWith('x-stainless-')) || !req.get('user-agent');

export function agentFoldersRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Agents');
  const on = routeTable(router, agentFoldersContext(ctx));
  for (const noun of ['folders', 'sources'] as const) {
    const docs = folderRouteDocs(noun);
    on.patch(`/v1/agents/:agentId/${noun}/attach/:folderId`, docs.attach, attachFolder(noun));
    on.patch(`/v1/agents/:agentId/${noun}/detach/:folderId`, docs.detach, detachFolder(noun));
    on.get(`/v1/agents/:agentId/${noun}`, docs.list, listAgentFolders);
  }
  on.get('/v1/agents/:agentId/files', listFilesForAgentDoc, listFilesForAgent);
  on.patch('/v1/agents/:agentId/files/close-all', closeAllFilesForAgentDoc, closeAllFilesForAgent);
  on.patch('/v1/agents/:agentId/files/:fileId/open', openFileForAgentDoc, openFileForAgent);
  on.patch('/v1/agents/:agentId/files/:fileId/close', closeFileForAgentDoc, closeFileForAgent);

  return router;
}

/** What the routes of agentFoldersRouter share. */
function agentFoldersContext(ctx: ApiContext) {
  const loadAgent = async (id: string) => {
    const agent = await getAgent(ctx.db, id);
    if (!agent) throw notFound(`Agent ${id}`);
    return agent;
  };
  const loadFolder = async (id: string) => {
    const folder = await views.getFolder(ctx.db, id);
    if (!folder) throw notFound(`Folder ${id}`);
    return folder;
  };
  const stateOf = async (agentId: string) => agentState(ctx.db, await loadAgent(agentId));
  return { ctx, loadAgent, loadFolder, stateOf };
}

type AgentFoldersContext = ReturnType<typeof agentFoldersContext>;

type FolderNoun = 'folders' | 'sources';

/**
 * What the reference says of an agent's folder routes: `folders` answers 1.x SDKs with null, as Letta
 * does; the deprecated `sources` always with the agent.
 */
function folderRouteDocs(noun: FolderNoun): Record<'attach' | 'detach' | 'list', RouteDoc> {
  const legacy = noun === 'sources';
  /** The legacy `sources` paths: deprecated in Letta, they always answer with the agent. */
  const deprecated = legacy ? 'Letta’s deprecated `sources` path of the folders route.' : undefined;
  return {
    attach: legacy
      ? { summary: 'Attach source to agent', description: deprecated, response: AgentStateSchema }
      : {
          summary: 'Attach folder to agent',
          description: `Gives the agent the file tools and opens the folder’s files. ${MODERN_SDK_NULL}`,
          response: AgentStateSchema.nullable(),
        },
    detach: legacy
      ? { summary: 'Detach source from agent', description: deprecated, response: AgentStateSchema }
      : {
          summary: 'Detach folder from agent',
          description: MODERN_SDK_NULL,
          response: AgentStateSchema.nullable(),
        },
    list: {
      summary: legacy ? 'List agent sources' : 'List folders for agent',
      ...(deprecated ? { description: deprecated } : {}),
      query: ListAgentFoldersQuery,
      response: z.array(FolderSchema),
    },
  };
}

type FolderParams = Request<{ agentId: string; folderId: string }>;

/** Attaches a folder to an agent; the answer as the noun's route gives it. */
function attachFolder(noun: FolderNoun) {
  return async function attachFolderToAgentRoute(
    { ctx, loadAgent, loadFolder, stateOf }: AgentFoldersContext,
    req: FolderParams,
    res: Response,
  ) {
    const agent = await loadAgent(req.params.agentId);
    const folder = await loadFolder(req.params.folderId);
    await attachFolderToAgent(ctx.db, agent, folder.id);
    res.json(noun === 'folders' && isModernSdk(req) ? null : await stateOf(agent.id));
  };
}

/** Detaches a folder from an agent; the answer as the noun's route gives it. */
function detachFolder(noun: FolderNoun) {
  return async function detachFolderFromAgentRoute(
    { ctx, loadAgent, loadFolder, stateOf }: AgentFoldersContext,
    req: FolderParams,
    res: Response,
  ) {
    const agent = await loadAgent(req.params.agentId);
    const folder = await loadFolder(req.params.folderId);
    await detachFolderFromAgent(ctx.db, agent.id, folder.id);
    res.json(noun === 'folders' && isModernSdk(req) ? null : await stateOf(agent.id));
  };
}

async function listAgentFolders(
  { ctx, loadAgent }: AgentFoldersContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  await loadAgent(req.params.agentId);
  const page = parseQuery(ListAgentFoldersQuery, req);
  res.json((await views.listAgentFolders(ctx.db, req.params.agentId, page)).map(folderShape));
}

const listFilesForAgentDoc: RouteDoc = {
  summary: 'List files for agent',
  query: ListAgentFilesQuery,
  response: PaginatedAgentFilesSchema,
};

async function listFilesForAgent(
  { ctx, loadAgent }: AgentFoldersContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  const agent = await loadAgent(req.params.agentId);
  const { cursor, is_open, limit, ...page } = parseQuery(ListAgentFilesQuery, req);
  const rows = await views.listFileViews(ctx.db, agent.id, {
    ...page,
    after: page.after ?? (page.before ? undefined : cursor),
    limit: limit + 1,
    isOpen: is_open,
  });
  const files = rows.slice(0, limit);
  const names = new Map((agent.directories?.folders ?? []).map((folder) => [folder.id, folder.name]));
  res.json({
    files: files.map((view) => agentFileShape(view, names.get(view.folder_id) ?? 'Unknown')),
    next_cursor: rows.length > limit ? (files[files.length - 1]?.id ?? null) : null,
    has_more: rows.length > limit,
  } satisfies PaginatedAgentFiles);
}

const closeAllFilesForAgentDoc: RouteDoc = {
  summary: 'Close all files for agent',
  description: 'Answers with the names of the files it closed.',
  response: ClosedFileNames,
};

async function closeAllFilesForAgent(
  { ctx, loadAgent }: AgentFoldersContext,
  req: Request<{ agentId: string }>,
  res: Response,
) {
  const agent = await loadAgent(req.params.agentId);
  res.json(await withAgentFiles(ctx.db, agent.id, (tx) => views.closeAllOtherFiles(tx, agent.id, [])));
}

const openFileForAgentDoc: RouteDoc = {
  summary: 'Open file for agent',
  // Any folder's file, by id: beyond what a token of this agent may read.
  scopedTokens: false,
  description:
    'Answers with the names of the files closed to keep within the agent’s limit of open files (least recently used first).',
  response: ClosedFileNames,
};

async function openFileForAgent(
  { ctx, loadAgent }: AgentFoldersContext,
  req: Request<{ agentId: string; fileId: string }>,
  res: Response,
) {
  const agent = await loadAgent(req.params.agentId);
  const { fileId } = req.params;
  const file = await views.getFolderFile(ctx.db, fileId);
  if (!file) throw notFound(`File with id=${fileId}`);
  const limits = fileLimits(agent);
  const visible = truncateVisibleContent(chunkFile(file).join('\n'), true, limits.charLimit);
  const { closed } = await withAgentFiles(ctx.db, agent.id, (tx) =>
    openFileView(
      tx,
      {
        agentId: agent.id,
        fileId,
        folderId: file.folder_id,
        fileName: file.file_name,
        visibleContent: visible,
        startLine: null,
        endLine: null,
      },
      limits.maxFilesOpen,
    ),
  );
  res.json(closed);
}

const closeFileForAgentDoc: RouteDoc = { summary: 'Close file for agent', response: MessageAnswerSchema };

async function closeFileForAgent(
  { ctx, loadAgent }: AgentFoldersContext,
  req: Request<{ agentId: string; fileId: string }>,
  res: Response,
) {
  const agent = await loadAgent(req.params.agentId);
  const { fileId } = req.params;
  if (!(await views.setFileViewClosed(ctx.db, agent.id, fileId)))
    throw notFound(`FileAgent(agent_id=${agent.id}, file_id=${fileId})`);
  res.json({ message: `File id=${fileId} successfully closed` });
}
