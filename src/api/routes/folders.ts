import type { Request, Response } from 'express';
/**
 * Letta's folders (`/v1/folders`, and the older `/v1/sources` paths, same handlers): folders with their
 * embedding model, uploads (multipart, `file`) whose ingestion runs as a workflow per file
 * (src/agent/folders.ts, workflows/file-ingestion.ts), files, their passages, and the agents a folder
 * is attached to.
 */
import { z } from 'zod';
import { receiveFile } from '../upload';
import type { ApiContext } from '../context';
import { HttpError, notFound } from '../errors';
import { parseBody, parseParams, parseQuery } from '../validation';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import {
  CreateFolderSchema,
  FileMetadataSchema,
  FileParams,
  FolderParams,
  FolderPassageSchema,
  FolderSchema,
  ListFilesQuery,
  ListFolderAgentsQuery,
  ListFolderPassagesQuery,
  ListFoldersQuery,
  RetrieveFileQuery,
  UpdateFolderSchema,
  UploadForm,
  UploadQuery,
  type FileMetadata,
  type Folder,
  type FolderPassage,
} from '../schemas/folders';
import {
  createFolder,
  deleteFile,
  deleteFolder,
  sanitizeFileName,
  updateFolder,
  uploadFile,
  UploadRefused,
} from '../../agent/folders';
import * as folders from '../../db/folders';
import { passageShape } from '../letta-shapes';

const iso = (date: Date | null) => (date ? new Date(date).toISOString() : null);

/** What the upload's form may hold besides the file. */
const UPLOAD_FORM = { fields: 16, fieldSize: 64 * 1024, parts: 20 };

export function folderShape(row: folders.FolderRow): Folder {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    instructions: row.instructions,
    metadata: row.metadata,
    embedding_config: row.embedding_config,
    vector_db_provider: 'native',
    created_by_id: null,
    last_updated_by_id: null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/**
 * Letta's FileMetadata. Files are named `<folder>/<file>`; lists and retrieves show the name without
 * the folder (Letta's strip_directory_prefix), an upload's answer shows it whole, as Letta's do.
 */
export function fileShape(row: folders.FileRow, options: { stripFolder?: boolean } = {}): FileMetadata {
  return {
    id: row.id,
    source_id: row.folder_id,
    file_name: options.stripFolder ? row.file_name.slice(row.file_name.lastIndexOf('/') + 1) : row.file_name,
    original_file_name: row.original_file_name,
    file_path: null,
    file_type: row.file_type,
    file_size: row.file_size === null ? null : Number(row.file_size),
    file_creation_date: null,
    file_last_modified_date: null,
    processing_status: row.processing_status,
    error_message: row.error_message,
    total_chunks: row.total_chunks,
    chunks_embedded: row.chunks_embedded,
    content: row.content ?? null,
    organization_id: null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

function folderPassageShape(row: folders.FolderPassageRow, folderId: string): FolderPassage {
  return { ...passageShape(row), file_id: row.file_id, file_name: row.file_name, source_id: folderId };
}

const MISSING_FILE = [{ type: 'missing', loc: ['body', 'file'], msg: 'Field required' }];

export function foldersRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Folders', { params: FileParams });
  const on = routeTable(router, foldersContext(ctx));
  const receive = receiveFile('File', ctx.config.FILE_MAX_BYTES, UPLOAD_FORM);

  // Letta's folders, and the same under their older name.
  for (const base of ['/v1/folders', '/v1/sources']) {
    on.post(base, underBase(base, createFolderRouteDoc), createFolderRoute);
    on.get(base, underBase(base, listFoldersDoc), listFolders);
    on.get(`${base}/count`, underBase(base, countFoldersDoc), countFolders);
    on.get(`${base}/name/:folderName`, underBase(base, folderIdByNameDoc), folderIdByName);
    on.get(`${base}/:folderId`, underBase(base, retrieveFolderDoc), retrieveFolder);
    on.patch(`${base}/:folderId`, underBase(base, modifyFolderDoc), modifyFolder);
    on.delete(`${base}/:folderId`, underBase(base, deleteFolderRouteDoc), deleteFolderRoute);
    on.post(`${base}/:folderId/upload`, underBase(base, uploadFileToFolderDoc), receive, uploadFileToFolder);
    on.get(`${base}/:folderId/agents`, underBase(base, listAgentsOfFolderDoc), listAgentsOfFolder);
    on.get(`${base}/:folderId/passages`, underBase(base, listFoldersPassagesDoc), listFoldersPassages);
    on.get(`${base}/:folderId/files`, underBase(base, listFoldersFilesDoc), listFoldersFiles);
    on.get(`${base}/:folderId/files/:fileId`, underBase(base, retrieveFileOfFolderDoc), retrieveFileOfFolder);
    on.delete(`${base}/:folderId/:fileId`, underBase(base, deleteFileFromFolderDoc), deleteFileFromFolder);
  }

  return router;
}

/** What the routes of foldersRouter share. */
function foldersContext(ctx: ApiContext) {
  const loadFolder = async (id: string) => {
    const folder = await folders.getFolder(ctx.db, id);
    if (!folder) throw notFound(`Folder ${id}`);
    return folder;
  };
  return { ctx, loadFolder };
}

type FoldersContext = ReturnType<typeof foldersContext>;

/** A folder route's doc under `base`: under the older name, its description says so. */
function underBase(base: string, doc: RouteDoc): RouteDoc {
  const alias = base === '/v1/sources' ? 'The same as under /v1/folders, by its older name.' : undefined;
  const description = [doc.description, alias].filter(Boolean).join(' ');
  return { ...doc, ...(description ? { description } : {}) };
}

const createFolderRouteDoc: RouteDoc = {
  summary: 'Create a folder',
  body: CreateFolderSchema,
  response: FolderSchema,
};

const listFoldersDoc: RouteDoc = {
  summary: 'List folders',
  query: ListFoldersQuery,
  response: z.array(FolderSchema),
};

const countFoldersDoc: RouteDoc = { summary: 'Count folders', response: z.number().int() };

const folderIdByNameDoc: RouteDoc = {
  summary: "Get a folder's id by its name",
  description: 'Deprecated in Letta: list folders with `name` instead.',
  response: z.string(),
};

const retrieveFolderDoc: RouteDoc = { summary: 'Retrieve a folder', response: FolderSchema };

const modifyFolderDoc: RouteDoc = {
  summary: 'Modify a folder',
  body: UpdateFolderSchema,
  response: FolderSchema,
};

const deleteFolderRouteDoc: RouteDoc = { summary: 'Delete a folder', response: z.null() };

const uploadFileToFolderDoc: RouteDoc = {
  summary: 'Upload a file to a folder',
  description:
    'The file (`file`) is ingested (parsed, embedded) after the answer: see its `processing_status`. ' +
    'A duplicate skipped (`duplicate_handling=skip`) answers the file already there, with the header ' +
    '`X-Upload-Result: skipped`.',
  form: UploadForm,
  query: UploadQuery,
  response: FileMetadataSchema,
};

const listAgentsOfFolderDoc: RouteDoc = {
  summary: 'List the agents a folder is attached to',
  description: 'Their ids.',
  query: ListFolderAgentsQuery,
  response: z.array(z.string()),
};

const listFoldersPassagesDoc: RouteDoc = {
  summary: "List a folder's passages",
  query: ListFolderPassagesQuery,
  response: z.array(FolderPassageSchema),
};

const listFoldersFilesDoc: RouteDoc = {
  summary: "List a folder's files",
  query: ListFilesQuery,
  response: z.array(FileMetadataSchema),
};

const retrieveFileOfFolderDoc: RouteDoc = {
  summary: 'Retrieve a file of a folder',
  query: RetrieveFileQuery,
  response: FileMetadataSchema,
};

const deleteFileFromFolderDoc: RouteDoc = { summary: 'Delete a file from a folder', noContent: true };

async function createFolderRoute({ ctx }: FoldersContext, req: Request, res: Response) {
  res.json(folderShape(await createFolder(ctx, parseBody(CreateFolderSchema, req))));
}

async function listFolders({ ctx }: FoldersContext, req: Request, res: Response) {
  const { name, order_by: _orderBy, ...page } = parseQuery(ListFoldersQuery, req);
  res.json((await folders.listFolders(ctx.db, { name }, page)).map(folderShape));
}

async function countFolders({ ctx }: FoldersContext, _req: Request, res: Response) {
  const [row] = await ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM folders');
  res.json(row.n);
}

async function folderIdByName({ ctx }: FoldersContext, req: Request<{ folderName: string }>, res: Response) {
  const [folder] = await folders.listFolders(
    ctx.db,
    { name: String(req.params.folderName) },
    { limit: 1, order: 'asc' },
  );
  if (!folder) throw notFound(`Folder with name ${req.params.folderName}`);
  res.json(folder.id);
}

async function retrieveFolder(
  { loadFolder }: FoldersContext,
  req: Request<{ folderId: string }>,
  res: Response,
) {
  const { folderId } = parseParams(FolderParams, req);
  res.json(folderShape(await loadFolder(folderId)));
}

async function modifyFolder({ ctx }: FoldersContext, req: Request<{ folderId: string }>, res: Response) {
  const { folderId } = parseParams(FolderParams, req);
  const body = parseBody(UpdateFolderSchema, req);
  res.json(folderShape(await updateFolder(ctx, folderId, body)));
}

async function deleteFolderRoute({ ctx }: FoldersContext, req: Request<{ folderId: string }>, res: Response) {
  const { folderId } = parseParams(FolderParams, req);
  await deleteFolder(ctx, folderId);
  res.json(null);
}

async function uploadFileToFolder(
  { ctx }: FoldersContext,
  req: Request<{ folderId: string }>,
  res: Response,
) {
  const { folderId } = parseParams(FolderParams, req);
  const query = parseQuery(UploadQuery, req);
  if (!req.file) throw new HttpError(422, MISSING_FILE);
  try {
    const { file, skipped } = await uploadFile(ctx, {
      folderId,
      fileName: query.name ?? sanitizeFileName(req.file.originalname),
      contentType: req.file.mimetype,
      data: req.file.buffer,
      duplicateHandling: query.duplicate_handling,
    });
    if (skipped) res.setHeader('X-Upload-Result', 'skipped');
    res.json(fileShape(file));
  } catch (error) {
    if (error instanceof UploadRefused) throw new HttpError(error.status, error.message);
    throw error;
  }
}

async function listAgentsOfFolder(
  { ctx, loadFolder }: FoldersContext,
  req: Request<{ folderId: string }>,
  res: Response,
) {
  const { folderId } = parseParams(FolderParams, req);
  const { order_by: _orderBy, ...page } = parseQuery(ListFolderAgentsQuery, req);
  await loadFolder(folderId);
  res.json(await folders.folderAgentIds(ctx.db, folderId, page));
}

async function listFoldersPassages(
  { ctx, loadFolder }: FoldersContext,
  req: Request<{ folderId: string }>,
  res: Response,
) {
  const { folderId } = parseParams(FolderParams, req);
  const { order_by: _orderBy, ...page } = parseQuery(ListFolderPassagesQuery, req);
  const folder = await loadFolder(folderId);
  const rows = await folders.listFolderPassages(ctx.db, folder, page);
  res.json(rows.map((row) => folderPassageShape(row, folderId)));
}

async function listFoldersFiles(
  { ctx, loadFolder }: FoldersContext,
  req: Request<{ folderId: string }>,
  res: Response,
) {
  const { folderId } = parseParams(FolderParams, req);
  const { include_content, order_by: _orderBy, ...page } = parseQuery(ListFilesQuery, req);
  await loadFolder(folderId);
  const rows = await folders.listFiles(ctx.db, folderId, page, include_content);
  res.json(rows.map((row) => fileShape(row, { stripFolder: true })));
}

async function retrieveFileOfFolder(
  { ctx }: FoldersContext,
  req: Request<{ folderId: string; fileId: string }>,
  res: Response,
) {
  const { folderId, fileId } = parseParams(FileParams, req);
  const { include_content } = parseQuery(RetrieveFileQuery, req);
  const file = await folders.getFile(ctx.db, fileId, include_content);
  if (!file || file.folder_id !== folderId)
    throw new HttpError(404, `File with id=${fileId} not found in folder ${folderId}`);
  res.json(fileShape(file, { stripFolder: true }));
}

async function deleteFileFromFolder(
  { ctx }: FoldersContext,
  req: Request<{ folderId: string; fileId: string }>,
  res: Response,
) {
  const { folderId, fileId } = parseParams(FileParams, req);
  await deleteFile(ctx, folderId, fileId);
  res.status(204).end();
}
