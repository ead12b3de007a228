/** One attempt at delivering a webhook (workflows/webhook-delivery.ts retries it). */
import { ApplicationFailure } from '@temporalio/activity';
import { getRun, recordCallback } from '../src/db/runs';
import { getAgentRow } from '../src/db/agents';
import type { Queryable } from '../src/db';
import type { RunRow } from '../src/db/rows';
import {
  approvalNotice,
  approvalWebhookUrl,
  postSigned,
  type DeliveryAttempt,
  type LinkMaker,
} from '../src/agent/webhooks';
import type { OutboundPolicy } from '../src/net/safe-fetch';
import type { WebhookSubject } from '../contracts/payloads';
import type { WebhookActivities } from '../contracts/activities';

export interface WebhookDeps {
  db: Queryable;
  /** Where and how far a delivery may go (OUTBOUND_ALLOW_PRIVATE, WEBHOOK_TIMEOUT_MS). */
  policy: OutboundPolicy;
  secret: () => Promise<string>;
  /** A run's callback body: Letta's callback payload, built by the API layer, which knows its shapes. */
  runPayload: (run: RunRow) => Promise<unknown>;
  /** APPROVAL_WEBHOOK_URL: where approval notices of agents without their own go. */
  approvalUrl?: string;
  /** The signed approve / deny links an approval notice carries; none: notices without links. */
  links?: LinkMaker;
}

const delivered = (run: RunRow) =>
  run.callback_status_code !== null && run.callback_status_code >= 200 && run.callback_status_code < 300;

const failedUnless = (attempt: DeliveryAttempt) => {
  if (attempt.error) throw ApplicationFailure.retryable(attempt.error, 'WebhookNotDelivered');
};

export function webhookActivities({ db, policy, secret, runPayload, approvalUrl, links }: WebhookDeps) {
  /** The run's callback, recorded on the run: a delivered one (its completion lost) is not sent again. */
  const runCallback = async (runId: string) => {
    const run = await getRun(db, runId);
    if (!run?.callback_url || delivered(run)) return;
    const attempt = await postSigned(run.callback_url, await runPayload(run), await secret(), policy);
    await recordCallback(db, runId, attempt);
    failedUnless(attempt);
  };

  const approvalNoticeOf = async (subject: WebhookSubject) => {
    const agent = await getAgentRow(db, subject.agentId);
    const url = agent && approvalWebhookUrl(agent, approvalUrl);
    const via = url && new URL(url).host;
    const linksVia = links && ((pause: Parameters<LinkMaker>[0]) => links({ ...pause, via }));
    const payload = url && (await approvalNotice(db, subject, linksVia));
    if (url && payload) failedUnless(await postSigned(url, payload, await secret(), policy));
  };

  return {
    async deliverWebhook(subject: WebhookSubject): Promise<void> {
      if (subject.kind === 'run_callback') await runCallback(subject.id);
      else await approvalNoticeOf(subject);
    },
  } satisfies WebhookActivities;
}
