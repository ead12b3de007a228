/**
 * The activities of a file's ingestion (workflows/file-ingestion.ts): parse the upload and store its
 * chunks, embed one batch of chunks into passages, and mark the file completed or failed. Each is
 * idempotent: a retry, or a run again after the worker died, stores nothing twice (the chunks and the
 * passages are keyed by the file and the chunk's place).
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { embedTexts } from '../src/memory/embeddings';
import { showFileToAgents } from '../src/memory/file-views';
import { chunkText, FileParseError, parseFile } from '../src/agent/file-parsing';
import * as folders from '../src/db/folders';
import { DomainError } from '../src/errors';
import { newId } from '../src/ids';
import { ModelApiError } from '../src/llm/types';
import type { ActivityDeps } from './deps';
import type { EmbedBatchInput, FileIngestionInput, ParsedFile } from '../contracts/payloads';
import { withHeartbeats } from './heartbeat';
import type { FileIngestionActivities } from '../contracts/activities';
import { FILE_GONE } from '../contracts/errors';

/** Longest error message stored on a file that failed. */
const ERROR_MESSAGE_CHARS = 1_000;

const gone = (fileId: string) =>
  ApplicationFailure.nonRetryable(`file ${fileId} no longer exists`, FILE_GONE);

/** Errors no retry can mend end the ingestion; the others (rate limits, 5xx, the database) are retried. */
function final(error: unknown): unknown {
  if (error instanceof FileParseError) return ApplicationFailure.nonRetryable(error.message, error.name);
  if (error instanceof DomainError) return ApplicationFailure.nonRetryable(error.message, 'InvalidEmbedding');
  if (error instanceof ModelApiError && !error.retryable)
    return ApplicationFailure.nonRetryable(error.message, 'EmbeddingRefused');
  return error;
}

/** The file's text: parsed from the upload the first time, kept since. */
async function fileText(db: ActivityDeps['db'], file: folders.IngestionFile): Promise<string> {
  if (file.content !== null) return file.content;
  if (!file.data) throw ApplicationFailure.nonRetryable('the upload is missing', 'FileParseError');
  await folders.setFileStatus(db, file.id, 'parsing');
  try {
    return await withHeartbeats(parseFile(file.data, file.file_type));
  } catch (error) {
    throw final(error);
  }
}

/** The chunks as passages, embedded in one request to the folder's embedding model. */
async function embeddedPassages(
  providers: ActivityDeps['providers'],
  file: folders.IngestionFile,
  chunks: { chunk_index: number; text: string }[],
): Promise<folders.NewChunkPassage[]> {
  let vectors: number[][];
  try {
    vectors = await withHeartbeats(
      embedTexts(
        providers,
        file.embedding_config,
        chunks.map((chunk) => chunk.text),
        `Folder ${file.folder_id}`,
        Context.current().cancellationSignal,
      ),
    );
  } catch (error) {
    throw final(error);
  }
  if (vectors.length !== chunks.length)
    throw new Error(`the embedding model returned ${vectors.length} vectors for ${chunks.length} texts`);
  return chunks.map((chunk, i) => ({
    id: newId('passage'),
    chunk_index: chunk.chunk_index,
    text: chunk.text,
    embedding: vectors[i],
  }));
}

export function fileIngestionActivities({ db, providers }: ActivityDeps) {
  return {
    /** Parses the upload (once: a parsed file keeps its text) and stores its chunks. */
    async parseFile(
      input: Pick<FileIngestionInput, 'fileId' | 'chunkSize' | 'chunkOverlap'>,
    ): Promise<ParsedFile> {
      const file = await folders.ingestionFile(db, input.fileId, true);
      if (!file) throw gone(input.fileId);
      const content = await fileText(db, file);
      const chunks = chunkText(content, file.file_type, {
        chunkSize: input.chunkSize,
        overlap: input.chunkOverlap,
      });
      if (chunks.length === 0)
        throw ApplicationFailure.nonRetryable(
          'No chunks created from text: the file holds no text',
          'FileParseError',
        );
      await db.transaction((tx) => folders.storeParsedFile(tx, file.id, content, chunks));
      return { totalChunks: chunks.length };
    },

    /**
     * Embeds the chunks [start, end) of a file that have no passage yet, in one request to the folder's
     * embedding model, and stores them as passages; returns how many of the file's chunks are stored.
     */
    async embedChunks({ fileId, start, end }: EmbedBatchInput): Promise<{ chunksEmbedded: number }> {
      const file = await folders.ingestionFile(db, fileId);
      if (!file) throw gone(fileId);
      const chunks = await folders.chunksToEmbed(db, fileId, start, end);
      const passages = chunks.length ? await embeddedPassages(providers, file, chunks) : [];
      try {
        const chunksEmbedded = await db.transaction((tx) => folders.storeChunkPassages(tx, file, passages));
        return { chunksEmbedded };
      } catch (error) {
        // Deleted meanwhile: its passages could not refer to it.
        if (!(await folders.ingestionFile(db, fileId))) throw gone(fileId);
        throw error;
      }
    },

    /** The file is ingested: completed, and shown to the agents its folder is attached to. */
    async finishIngestion({ fileId }: { fileId: string }): Promise<void> {
      await db.transaction(async (tx) => {
        if (await folders.completeFile(tx, fileId)) await showFileToAgents(tx, fileId);
      });
    },

    /** The file could not be ingested: `error`, with Letta's error_message. */
    async failIngestion({ fileId, error }: { fileId: string; error: string }): Promise<void> {
      await folders.setFileStatus(db, fileId, 'error', {
        error_message: error.slice(0, ERROR_MESSAGE_CHARS),
      });
    },
  } satisfies FileIngestionActivities;
}
