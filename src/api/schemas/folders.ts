/** Letta's folders (and sources) API: what the routes take, and the folder and file shapes they answer. */
import { z } from 'zod';
import { idOf, pageQuery, queryBoolean } from './common';
import { PassageSchema } from './responses';

const JsonObject = z.record(z.string(), z.unknown());

/** Letta's EmbeddingConfig, as a folder is given it: the model and its endpoint, the rest kept. */
const EmbeddingConfigSchema = z.looseObject({
  embedding_endpoint_type: z.string().min(1),
  embedding_model: z.string().min(1),
  embedding_dim: z.number().int().positive().max(65536),
  embedding_endpoint: z.string().nullish(),
  embedding_chunk_size: z.number().int().min(16).max(100_000).nullish(),
});

/** Letta's SourceCreate. */
export const CreateFolderSchema = z.object({
  name: z.string().min(1).max(255),
  description: z.string().nullish(),
  instructions: z.string().nullish(),
  metadata: JsonObject.nullish(),
  embedding: z.string().min(1).nullish(),
  embedding_chunk_size: z.number().int().min(16).max(100_000).nullish(),
  embedding_config: EmbeddingConfigSchema.nullish(),
});

/** Letta's SourceUpdate. */
export const UpdateFolderSchema = z.object({
  name: z.string().min(1).max(255).nullish(),
  description: z.string().nullish(),
  instructions: z.string().nullish(),
  metadata: JsonObject.nullish(),
  embedding_config: EmbeddingConfigSchema.nullish(),
});

const orderBy = z.enum(['created_at']).default('created_at');

export const ListFoldersQuery = pageQuery(50, 'asc').extend({
  name: z.string().optional(),
  order_by: orderBy,
});

export const ListFolderAgentsQuery = pageQuery(50, 'desc').extend({ order_by: orderBy });

export const ListFolderPassagesQuery = pageQuery(100, 'desc').extend({ order_by: orderBy });

export const ListFilesQuery = pageQuery(1000, 'desc').extend({
  order_by: orderBy,
  include_content: queryBoolean.default(false),
});

export const RetrieveFileQuery = z.object({ include_content: queryBoolean.default(false) });

export const UploadQuery = z.object({
  duplicate_handling: z.enum(['skip', 'error', 'suffix', 'replace']).default('suffix'),
  name: z.string().trim().min(1).max(255).optional(),
});

export const FolderParams = z.object({ folderId: idOf('source') });
export const FileParams = z.object({ folderId: idOf('source'), fileId: idOf('file') });

/** Letta's Folder (Source). */
export const FolderSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    instructions: z.string().nullable(),
    metadata: JsonObject.nullable(),
    embedding_config: JsonObject,
    vector_db_provider: z.literal('native'),
    created_by_id: z.null(),
    last_updated_by_id: z.null(),
    created_at: z.string().nullable(),
    updated_at: z.string().nullable(),
  })
  .meta({ id: 'Folder' });
export type Folder = z.infer<typeof FolderSchema>;

/** Letta's FileMetadata. */
export const FileMetadataSchema = z
  .object({
    id: z.string(),
    source_id: z.string(),
    file_name: z.string(),
    original_file_name: z.string(),
    file_path: z.null(),
    file_type: z.string().nullable(),
    file_size: z.number().nullable(),
    file_creation_date: z.null(),
    file_last_modified_date: z.null(),
    processing_status: z.enum(['pending', 'parsing', 'embedding', 'completed', 'error']),
    error_message: z.string().nullable(),
    total_chunks: z.number().nullable(),
    chunks_embedded: z.number().nullable(),
    content: z.string().nullable(),
    organization_id: z.null(),
    created_at: z.string().nullable(),
    updated_at: z.string().nullable(),
  })
  .meta({ id: 'FileMetadata' });
export type FileMetadata = z.infer<typeof FileMetadataSchema>;

/** Letta's Passage of a folder's file: the file and the folder it came from. */
export const FolderPassageSchema = PassageSchema.extend({
  file_id: z.string().nullable(),
  file_name: z.string().nullable(),
  source_id: z.string(),
}).meta({ id: 'FolderPassage' });
export type FolderPassage = z.infer<typeof FolderPassageSchema>;

/** A multipart upload's form: the file (`file`). */
export const UploadForm = z.object({ file: z.any().meta({ type: 'string', format: 'binary' }) });
