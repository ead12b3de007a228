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
import { documentedRouter, type DocumentedRouter } from '../route-book';
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
  const router = documentedRouter('Folders');
  const receive = receiveFile('File', ctx.config.FILE_MAX_BYTES, UPLOAD_FORM);

  const loadFolder = async (id: string) => {
    const folder = await folders.getFolder(ctx.db, id);
    if (!folder) throw notFound(`Folder ${id}`);
    return folder;
  };

  // Letta's folders, and the same under their older name.
  for (const base of ['/v1/folders', '/v1/sources']) {
    /** A route's description, with a word on the older path. */
    const about = (text?: string) => {
      const alias = base === '/v1/sources' ? 'The same as under /v1/folders, by its older name.' : undefined;
      const description = [text, alias].filter(Boolean).join(' ');
      return description ? { description } : {};
    };

    router.post(
      base,
      { summary: 'Create a folder', ...about(), body: CreateFolderSchema, response: FolderSchema },
      async (req, res) => {
        res.json(folderShape(await createFolder(ctx, parseBody(CreateFolderSchema, req))));
      },
    );

    router.get(
      base,
      { summary: 'List folders', ...about(), query: ListFoldersQuery, response: z.array(FolderSchema) },
      async (req, res) => {
        const { name, order_by: _orderBy, ...page } = parseQuery(ListFoldersQuery, req);
        res.json((await folders.listFolders(ctx.db, { name }, page)).map(folderShape));
      },
    );

    router.get(
      `${base}/count`,
      { summary: 'Count folders', ...about(), response: z.number().int() },
      async (_req, res) => {
        const [row] = await ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM folders');
        res.json(row.n);
      },
    );

    router.get(
      `${base}/name/:folderName`,
      {
        summary: "Get a folder's id by its name",
        ...about('Deprecated in Letta: list folders with `name` instead.'),
        response: z.string(),
      },
      async (req, res) => {
        const [folder] = await folders.listFolders(
          ctx.db,
          { name: String(req.params.folderName) },
          { limit: 1, order: 'asc' },
        );
        if (!folder) throw notFound(`Folder with name ${req.params.folderName}`);
        res.json(folder.id);
      },
    );

    router.get(
      `${base}/:folderId`,
      { summary: 'Retrieve a folder', ...about(), response: FolderSchema },
      async (req, res) => {
        const { folderId } = parseParams(FolderParams, req);
        res.json(folderShape(await loadFolder(folderId)));
      },
    );

    router.patch(
      `${base}/:folderId`,
      { summary: 'Modify a folder', ...about(), body: UpdateFolderSchema, response: FolderSchema },
      async (req, res) => {
        const { folderId } = parseParams(FolderParams, req);
        const body = parseBody(UpdateFolderSchema, req);
        res.json(folderShape(await updateFolder(ctx, folderId, body)));
      },
    );

    router.delete(
      `${base}/:folderId`,
      { summary: 'Delete a folder', ...about(), response: z.null() },
      async (req, res) => {
        const { folderId } = parseParams(FolderParams, req);
        await deleteFolder(ctx, folderId);
        res.json(null);
      },
    );

    router.post(
      `${base}/:folderId/upload`,
      {
        summary: 'Upload a file to a folder',
        ...about(
          'The file (`file`) is ingested (parsed, embedded) after the answer: see its `processing_status`. ' +
            'A duplicate skipped (`duplicate_handling=skip`) answers the file already there, with the header ' +
            '`X-Upload-Result: skipped`.',
        ),
        form: UploadForm,
        query: UploadQuery,
        response: FileMetadataSchema,
      },
      receive,
      async (req, res) => {
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
      },
    );

    router.get(
      `${base}/:folderId/agents`,
      {
        summary: 'List the agents a folder is attached to',
        ...about('Their ids.'),
        query: ListFolderAgentsQuery,
        response: z.array(z.string()),
      },
      async (req, res) => {
        const { folderId } = parseParams(FolderParams, req);
        const { order_by: _orderBy, ...page } = parseQuery(ListFolderAgentsQuery, req);
        await loadFolder(folderId);
        res.json(await folders.folderAgentIds(ctx.db, folderId, page));
      },
    );

    router.get(
      `${base}/:folderId/passages`,
      {
        summary: "List a folder's passages",
        ...about(),
        query: ListFolderPassagesQuery,
        response: z.array(FolderPassageSchema),
      },
      async (req, res) => {
        const { folderId } = parseParams(FolderParams, req);
        const { order_by: _orderBy, ...page } = parseQuery(ListFolderPassagesQuery, req);
        const folder = await loadFolder(folderId);
        const rows = await folders.listFolderPassages(ctx.db, folder, page);
        res.json(rows.map((row) => folderPassageShape(row, folderId)));
      },
    );

    router.get(
      `${base}/:folderId/files`,
      {
        summary: "List a folder's files",
        ...about(),
        query: ListFilesQuery,
        response: z.array(FileMetadataSchema),
      },
      async (req, res) => {
        const { folderId } = parseParams(FolderParams, req);
        const { include_content, order_by: _orderBy, ...page } = parseQuery(ListFilesQuery, req);
        await loadFolder(folderId);
        const rows = await folders.listFiles(ctx.db, folderId, page, include_content);
        res.json(rows.map((row) => fileShape(row, { stripFolder: true })));
      },
    );

    router.get(
      `${base}/:folderId/files/:fileId`,
      {
        summary: 'Retrieve a file of a folder',
        ...about(),
        query: RetrieveFileQuery,
        response: FileMetadataSchema,
      },
      async (req, res) => {
        const { folderId, fileId } = parseParams(FileParams, req);
        const { include_content } = parseQuery(RetrieveFileQuery, req);
        const file = await folders.getFile(ctx.db, fileId, include_content);
        if (!file || file.folder_id !== folderId)
          throw new HttpError(404, `File with id=${fileId} not found in folder ${folderId}`);
        res.json(fileShape(file, { stripFolder: true }));
      },
    );

    router.delete(
      `${base}/:folderId/:fileId`,
      { summary: 'Delete a file from a folder', ...about() },
      async (req, res) => {
        const { folderId, fileId } = parseParams(FileParams, req);
        await deleteFile(ctx, folderId, fileId);
        res.status(204).end();
      },
    );
  }

  return router;
}
