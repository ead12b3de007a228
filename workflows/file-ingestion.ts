/**
 * One uploaded file's ingestion, as a workflow of its own (its id derives from the file's): parse the
 * upload into text and chunks, embed the chunks a batch per activity (each retried with backoff by
 * its retry policy: a provider's 429 or 5xx is tried again), and mark the file completed, or `error`
 * with the reason. The file's `processing_status` moves pending → parsing → embedding → completed,
 * `chunks_embedded` counting as batches land; the workflow's current details show the same in the
 * Temporal UI. A worker that dies mid-way is replaced: the workflow replays to where it was, and a
 * batch run again stores only the chunks that have no passage yet.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setWorkflowOptions,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { FileIngestionActivities } from '../contracts/activities';
import { FILE_GONE } from '../contracts/errors';
import type { FileIngestionInput, FileIngestionResult } from '../contracts/payloads';

function reason(error: unknown): string {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return (cause as Error)?.message ?? String(error);
}

export async function fileIngestion(input: FileIngestionInput): Promise<FileIngestionResult> {
  const { fileId, fileName } = input;
  const bookkeeping = proxyActivities<FileIngestionActivities>({
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds', maximumAttempts: 20 },
  });
  // Parsing fails for good on a file that cannot be read (a non-retryable failure); other failures
  // (the database, a worker that died) are retried.
  const parseOptions: ActivityOptions = {
    startToCloseTimeout: input.parseTimeoutMs,
    heartbeatTimeout: input.heartbeatTimeoutMs,
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '60 seconds',
      maximumAttempts: 5,
    },
  };
  const parse = proxyActivities<FileIngestionActivities>(parseOptions);
  const embedOptions: ActivityOptions = {
    startToCloseTimeout: input.embedTimeoutMs,
    heartbeatTimeout: input.heartbeatTimeoutMs,
    retry: {
      initialInterval: input.embedRetryInitialMs,
      backoffCoefficient: 2,
      maximumInterval: '60 seconds',
      maximumAttempts: input.embedMaxAttempts,
    },
  };
  const embed = proxyActivities<FileIngestionActivities>(embedOptions);

  try {
    setCurrentDetails(`Parsing ${fileName}`);
    const { totalChunks } = await parse.parseFile.executeWithOptions(
      { ...parseOptions, summary: `parse ${fileName}` },
      [{ fileId, chunkSize: input.chunkSize, chunkOverlap: input.chunkOverlap }],
    );
    let embedded = 0;
    for (let start = 0; start < totalChunks; start += input.batchSize) {
      const end = Math.min(totalChunks, start + input.batchSize);
      setCurrentDetails(
        `Embedding ${fileName}: ${embedded} of ${totalChunks} chunks stored, now chunks ${start + 1}–${end}`,
      );
      ({ chunksEmbedded: embedded } = await embed.embedChunks.executeWithOptions(
        { ...embedOptions, summary: `embed chunks ${start + 1}–${end} of ${totalChunks}` },
        [{ fileId, start, end }],
      ));
    }
    await bookkeeping.finishIngestion({ fileId });
    setCurrentDetails(`Completed: ${fileName}, ${totalChunks} chunks`);
    return { status: 'completed', totalChunks };
  } catch (error) {
    if (isCancellation(error)) throw error;
    const cause = error instanceof ActivityFailure ? error.cause : error;
    if (cause instanceof ApplicationFailure && cause.type === FILE_GONE) {
      setCurrentDetails(`${fileName} was deleted before its ingestion ended`);
      return { status: 'gone' };
    }
    const message = reason(error);
    await bookkeeping.failIngestion({ fileId, error: message });
    setCurrentDetails(`Failed: ${message}`);
    return { status: 'error', error: message };
  }
}

/**
 * Worker versioning (README "Upgrades"): AUTO_UPGRADE. An ingestion takes minutes (parsing, embedding
 * batches retried with backoff), short enough to pin, but pinned runs need their release's workers to
 * outlive the roll-out, and a server replaced in place has none left: a pinned ingestion would stay
 * `embedding` until an operator moved it. It is in the replay corpus (file-ingestion) like the turns.
 */
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, fileIngestion);
