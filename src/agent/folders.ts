/**
 * Letta's folders (once "sources") without HTTP: creating them with their embedding model and archive,
 * taking uploads (Letta's duplicate handling, the limits), starting each upload's ingestion workflow
 * (workflows/file-ingestion.ts), and deleting files and folders with their passages.
 */
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
} from '@temporalio/client';
import type { Workflows } from '../../contracts/workflows';
import type { FileIngestionInput } from '../../contracts/payloads';
import * as archives from '../db/archives';
import * as folders from '../db/folders';
import { isUniqueViolation } from '../db/sql';
import { conflict, invalid, notFound } from '../errors';
import { newId } from '../ids';
import { chosenEmbedding } from '../memory/embeddings';
import { mediaTypeOf, UNSUPPORTED_TYPE_HINT } from './file-types';
import type { TurnServices } from './turns';

export type FolderServices = TurnServices;

/** A request the upload cannot take: its status and Letta's text (415 type, 413 size). */
export class UploadRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface FolderCreate {
  name: string;
  description?: string | null;
  instructions?: string | null;
  metadata?: Record<string, unknown> | null;
  embedding?: string | null;
  embedding_config?: Record<string, unknown> | null;
  embedding_chunk_size?: number | null;
}

/**
 * The folder's embedding config, as Letta's create_folder picks it (a config, an `embedding` handle,
 * or the server's default): a folder's files are embedded, so it needs one.
 */
function folderEmbedding(body: FolderCreate, config: TurnServices['config']): Record<string, unknown> {
  const embedding = chosenEmbedding(body, config);
  if (!embedding) throw invalid('Must specify either embedding or embedding_config in request');
  // A config's own chunk size holds; one made from a handle gets the server's.
  return {
    ...embedding,
    embedding_chunk_size:
      body.embedding_chunk_size ?? body.embedding_config?.embedding_chunk_size ?? config.FILE_CHUNK_SIZE,
  };
}

const nameTaken = (name: string) => conflict(`A folder named '${name}' already exists`);

export async function createFolder(ctx: FolderServices, body: FolderCreate): Promise<folders.FolderRow> {
  const embedding = folderEmbedding(body, ctx.config);
  try {
    return await ctx.db.transaction(async (tx) => {
      // The files' passages live in an archive of the folder's own, never attached to an agent.
      const archive = await archives.insertArchive(tx, newId('archive'), {
        name: `folder ${body.name}`,
        description: null,
        embedding_config: embedding,
        metadata: null,
      });
      return folders.insertFolder(tx, newId('source'), archive.id, {
        name: body.name,
        description: body.description ?? null,
        instructions: body.instructions ?? null,
        embedding_config: embedding,
        embedding_chunk_size: body.embedding_chunk_size ?? null,
        metadata: body.metadata ?? null,
      });
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken(body.name);
    throw error;
  }
}

export async function updateFolder(
  ctx: FolderServices,
  id: string,
  fields: Partial<Pick<FolderCreate, 'description' | 'instructions' | 'metadata' | 'embedding_config'>> & {
    name?: string | null;
  },
): Promise<folders.FolderRow> {
  if (!(await folders.getFolder(ctx.db, id))) throw notFound(`Folder ${id}`);
  try {
    await folders.updateFolder(ctx.db, id, {
      name: fields.name ?? undefined,
      description: fields.description,
      instructions: fields.instructions,
      metadata: fields.metadata,
      embedding_config: fields.embedding_config ?? undefined,
    });
  } catch (error) {
    if (isUniqueViolation(error) && fields.name) throw nameTaken(fields.name);
    throw error;
  }
  return (await folders.getFolder(ctx.db, id))!;
}

/** The workflow that ingests a file: named by the file (and the deployment, as every workflow id). */
export const ingestionWorkflowId = (deploymentId: string, fileId: string) =>
  deploymentId ? `${deploymentId}/ingest/${fileId}` : `ingest/${fileId}`;

/** Stops ingestions that would otherwise run on for files being deleted (gone already is fine). */
async function cancelIngestions(ctx: FolderServices, workflowIds: string[]): Promise<void> {
  await Promise.all(
    workflowIds.map(async (id) => {
      try {
        await ctx.temporal.workflow.getHandle(id).cancel();
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
    }),
  );
}

export async function deleteFolder(ctx: FolderServices, id: string): Promise<void> {
  const running = await folders.ingestingWorkflows(ctx.db, { folderId: id });
  const deleted = await ctx.db.transaction((tx) => folders.deleteFolder(tx, id));
  if (!deleted) throw notFound(`Folder ${id}`);
  // The workflows find their file gone at their next activity anyway; cancelling spares the work.
  await cancelIngestions(ctx, running).catch(() => undefined);
}

export async function deleteFile(ctx: FolderServices, folderId: string, fileId: string): Promise<void> {
  const running = await folders.ingestingWorkflows(ctx.db, { fileId });
  if (!(await folders.deleteFile(ctx.db, folderId, fileId))) throw notFound(`File ${fileId}`);
  await cancelIngestions(ctx, running).catch(() => undefined);
}

export type DuplicateHandling = 'skip' | 'error' | 'suffix' | 'replace';

export interface Upload {
  folderId: string;
  /** The name the client sent the file under, or the `name` it asked for. */
  fileName: string;
  contentType?: string;
  data: Buffer;
  duplicateHandling: DuplicateHandling;
}

/** Letta's sanitize_filename, in short: the base name, without characters a path would take. */
export function sanitizeFileName(name: string): string {
  const base = name.split(/[/\\]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  const clean = base.replace(/[\u0000-\u001f<>:"|?*]/g, '_').trim();
  return clean && clean !== '.' && clean !== '..' ? clean.slice(0, 255) : 'file';
}

function splitName(name: string): [string, string] {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
}

/**
 * Takes an upload into a folder and starts its ingestion: the file as stored (`pending`), or, with
 * `skip`, the file already there under that name (`skipped`). Nothing is stored for an upload refused.
 */
export async function uploadFile(
  ctx: FolderServices,
  upload: Upload,
): Promise<{ file: folders.FileRow; skipped: boolean }> {
  const { config } = ctx;
  const mime = mediaTypeOf(upload.fileName, upload.contentType);
  if (!mime)
    throw new UploadRefused(
      415,
      `Unsupported file type: ${upload.contentType?.split(';')[0] || 'unknown'} (filename: ${upload.fileName}). ${UNSUPPORTED_TYPE_HINT}`,
    );
  if (upload.data.length > config.FILE_MAX_BYTES)
    throw new UploadRefused(
      413,
      `File too large: the most a file may have is ${config.FILE_MAX_BYTES} bytes`,
    );
  const fileId = newId('file');
  const workflowId = ingestionWorkflowId(ctx.deploymentId, fileId);
  const outcome = await ctx.db.transaction(async (tx) => {
    const folder = await folders.lockFolder(tx, upload.folderId);
    if (!folder) throw notFound(`Folder ${upload.folderId}`);
    const original = upload.fileName;
    const [existing] = await folders.filesByOriginalName(tx, folder.id, original);
    let replaced: string[] = [];
    if (existing) {
      if (upload.duplicateHandling === 'error')
        throw invalid(`File '${original}' already exists in folder '${folder.name}'`);
      if (upload.duplicateHandling === 'skip') return { file: existing, skipped: true, folder, replaced };
      if (upload.duplicateHandling === 'replace') {
        replaced = await folders.ingestingWorkflows(tx, { fileId: existing.id });
        await folders.deleteFile(tx, folder.id, existing.id);
      }
    }
    if ((await folders.countFiles(tx, folder.id)) >= config.FOLDER_MAX_FILES)
      throw conflict(
        `Folder '${folder.name}' holds ${config.FOLDER_MAX_FILES} files, the most a folder may (FOLDER_MAX_FILES)`,
      );
    // Letta's names: `<folder>/<file>`, a repeated name suffixed `_(n)` before its extension.
    const [base, extension] = splitName(original);
    let fileName = `${folder.name}/${original}`;
    for (let n = 1; await folders.fileNameTaken(tx, folder.id, fileName); n++)
      fileName = `${folder.name}/${base}_(${n})${extension}`;
    const file = await folders.insertFile(tx, {
      id: fileId,
      folder_id: folder.id,
      file_name: fileName,
      original_file_name: original,
      file_type: mime,
      file_size: upload.data.length,
      data: upload.data,
      workflow_id: workflowId,
    });
    return { file, skipped: false, folder, replaced };
  });
  if (outcome.skipped) return { file: outcome.file, skipped: true };
  await cancelIngestions(ctx, outcome.replaced).catch(() => undefined);
  const folder = outcome.folder;
  try {
    await startIngestion(ctx, outcome.file, folder);
  } catch (error) {
    // Not started: the upload is not kept either.
    await folders.deleteFile(ctx.db, folder.id, fileId);
    throw error;
  }
  return { file: outcome.file, skipped: false };
}

/** The chunk size a folder's files are cut to: its config's `embedding_chunk_size`, else the default. */
function chunkSizeOf(folder: folders.FolderRow, config: TurnServices['config']): number {
  const size = Number(folder.embedding_config.embedding_chunk_size ?? folder.embedding_chunk_size);
  return Number.isInteger(size) && size >= 16 ? size : config.FILE_CHUNK_SIZE;
}

/** Starts a file's ingestion workflow; asked again for the same file, it starts nothing new. */
export async function startIngestion(
  ctx: FolderServices,
  file: folders.FileRow,
  folder: folders.FolderRow,
): Promise<void> {
  const { config } = ctx;
  const input: FileIngestionInput = {
    fileId: file.id,
    fileName: file.file_name,
    chunkSize: chunkSizeOf(folder, config),
    chunkOverlap: config.FILE_CHUNK_OVERLAP,
    batchSize: config.EMBEDDING_BATCH_SIZE,
    parseTimeoutMs: config.FILE_PARSE_TIMEOUT_MS,
    embedTimeoutMs: config.MODEL_TIMEOUT_MS + 10_000,
    embedMaxAttempts: config.EMBEDDING_MAX_ATTEMPTS,
    embedRetryInitialMs: config.EMBEDDING_RETRY_INITIAL_MS,
    heartbeatTimeoutMs: config.ACTIVITY_HEARTBEAT_TIMEOUT_MS,
  };
  await ctx.temporal.workflow.start<Workflows['fileIngestion']>('fileIngestion', {
    workflowId: file.workflow_id ?? ingestionWorkflowId(ctx.deploymentId, file.id),
    taskQueue: ctx.taskQueues.agent,
    args: [input],
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    staticSummary: `Ingestion of ${file.file_name} (${file.id}) into folder ${folder.id}`,
  });
}

/**
 * Starts the ingestion of every upload still pending whose workflow never started (the API stopped
 * between storing the upload and starting it); one that did start (or ran) is left as it is.
 */
export async function resumePendingIngestions(ctx: FolderServices): Promise<number> {
  let started = 0;
  for (const file of await folders.pendingFiles(ctx.db)) {
    const folder = await folders.getFolder(ctx.db, file.folder_id);
    if (!folder) continue;
    try {
      await startIngestion(ctx, file, folder);
      started++;
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }
  return started;
}
