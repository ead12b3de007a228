/** One attempt at delivering a run's completion callback (workflows/run-callback.ts retries it). */
import { ApplicationFailure } from '@temporalio/activity';
import { getRun, recordCallback } from '../src/db/runs';
import type { Queryable } from '../src/db';
import type { RunRow } from '../src/db/rows';
import { postSigned } from '../src/agent/webhooks';
import type { OutboundPolicy } from '../src/net/safe-fetch';

export interface RunCallbackDeps {
  db: Queryable;
  /** Where and how far a delivery may go (OUTBOUND_ALLOW_PRIVATE, WEBHOOK_TIMEOUT_MS). */
  policy: OutboundPolicy;
  secret: () => Promise<string>;
  /** The POST's body: Letta's callback payload, built by the API layer, which knows its shapes. */
  payload: (run: RunRow) => Promise<unknown>;
}

const delivered = (run: RunRow) =>
  run.callback_status_code !== null && run.callback_status_code >= 200 && run.callback_status_code < 300;

export function runCallbackActivities({ db, policy, secret, payload }: RunCallbackDeps) {
  return {
    async postRunCallback({ runId }: { runId: string }): Promise<void> {
      const run = await getRun(db, runId);
      // Gone, or delivered by an attempt whose completion was lost: at most once per success.
      if (!run?.callback_url || delivered(run)) return;
      const attempt = await postSigned(run.callback_url, await payload(run), await secret(), policy);
      await recordCallback(db, runId, attempt);
      if (attempt.error) throw ApplicationFailure.retryable(attempt.error, 'CallbackNotDelivered');
    },
  };
}
