/** Letta's completion callback body (run_manager._dispatch_callback_async): the run and its result. */
import type { Queryable } from '../db';
import { runMessagesAfter } from '../db/messages';
import type { RunRow } from '../db/rows';
import { usageShape } from './letta-shapes';
import { outputMessages, stopReasonShape } from './run-stream';

export async function runCallbackPayload(db: Queryable, run: RunRow) {
  return {
    run_id: run.id,
    status: run.status,
    completed_at: run.completed_at ? new Date(run.completed_at).toISOString() : null,
    metadata: {
      ...run.metadata,
      result: {
        messages: outputMessages(await runMessagesAfter(db, run.id, 0)),
        stop_reason: stopReasonShape(run.stop_reason ?? 'error'),
        usage: usageShape(run.usage),
      },
    },
  };
}
