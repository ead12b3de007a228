/**
 * An agent's folders and files, as Letta routes them: `agents.folders.attach / detach / list`,
 * `agents.files.list / open / close / closeAll`, and the legacy `/v1/agents/{id}/sources/...` paths.
 * Attaching a folder gives the agent the file tools and opens its files (src/agent/file-views.ts).
 */
import { Router, type Request } from 'express';
import { z } from 'zod';
import type { ApiContext } from '../context';
import { notFound } from '../errors';
import { parseQuery } from '../validation';
import { pageQuery, queryBoolean } from '../schemas/common';
import { agentFileShape, folderShape } from '../letta-shapes';
import { agentState } from '../agent-state';
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
} from '../../agent/file-views';

const ListAgentFoldersQuery = pageQuery(100, 'desc');

const ListAgentFilesQuery = pageQuery(100, 'desc').extend({
  order_by: z.literal('created_at').optional(),
  /** Deprecated in Letta: the `after` of the previous page. */
  cursor: z.string().optional(),
  is_open: queryBoolean.optional(),
});

/** Letta's `is_1_0_sdk_version`: a Stainless header, or no User-Agent at all. */
const isModernSdk = (req: Request) =>
  Object.keys(req.headers).some((h) => h.startsWith('x-stainless-')) || !req.get('user-agent');

export function agentFoldersRouter(ctx: ApiContext): Router {
  const router = Router();

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

  // `folders` answers 1.x SDKs with null, as Letta does; the deprecated `sources` always with the agent.
  for (const noun of ['folders', 'sources'] as const) {
    router.patch(`/v1/agents/:agentId/${noun}/attach/:folderId`, async (req, res) => {
      const agent = await loadAgent(req.params.agentId);
      const folder = await loadFolder(req.params.folderId);
      await attachFolderToAgent(ctx.db, agent, folder.id);
      res.json(noun === 'folders' && isModernSdk(req) ? null : await stateOf(agent.id));
    });

    router.patch(`/v1/agents/:agentId/${noun}/detach/:folderId`, async (req, res) => {
      const agent = await loadAgent(req.params.agentId);
      const folder = await loadFolder(req.params.folderId);
      await detachFolderFromAgent(ctx.db, agent.id, folder.id);
      res.json(noun === 'folders' && isModernSdk(req) ? null : await stateOf(agent.id));
    });

    router.get(`/v1/agents/:agentId/${noun}`, async (req, res) => {
      await loadAgent(req.params.agentId);
      const page = parseQuery(ListAgentFoldersQuery, req);
      res.json((await views.listAgentFolders(ctx.db, req.params.agentId, page)).map(folderShape));
    });
  }

  router.get('/v1/agents/:agentId/files', async (req, res) => {
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
    });
  });

  router.patch('/v1/agents/:agentId/files/close-all', async (req, res) => {
    const agent = await loadAgent(req.params.agentId);
    res.json(await withAgentFiles(ctx.db, agent.id, (tx) => views.closeAllOtherFiles(tx, agent.id, [])));
  });

  router.patch('/v1/agents/:agentId/files/:fileId/open', async (req, res) => {
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
  });

  router.patch('/v1/agents/:agentId/files/:fileId/close', async (req, res) => {
    const agent = await loadAgent(req.params.agentId);
    const { fileId } = req.params;
    if (!(await views.setFileViewClosed(ctx.db, agent.id, fileId)))
      throw notFound(`FileAgent(agent_id=${agent.id}, file_id=${fileId})`);
    res.json({ message: `File id=${fileId} successfully closed` });
  });

  return router;
}
