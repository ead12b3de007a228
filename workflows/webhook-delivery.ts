/**
 * The delivery of one webhook (a run's completion callback, an approval notice): one activity, retried
 * with backoff until the receiver answers 2xx or the attempts are spent (the workflow then fails, as
 * the Temporal UI shows). Its own workflow, so that a slow receiver holds up no turn of the agent, and
 * a restart of every component loses no delivery.
 */
import { proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import type { WebhookDelivery } from '../contracts/payloads';
import type { WebhookActivities } from '../contracts/activities';

export async function webhookDelivery(input: WebhookDelivery): Promise<void> {
  const { deliverWebhook } = proxyActivities<WebhookActivities>({
    startToCloseTimeout: input.timeoutMs + 5_000,
    retry: {
      initialInterval: input.initialRetryMs,
      backoffCoefficient: 2,
      maximumInterval: input.maxRetryMs,
      maximumAttempts: input.maxAttempts,
    },
  });
  await deliverWebhook(input.subject);
}

/**
 * Worker versioning (README "Upgrades"): AUTO_UPGRADE, for the reason of fileIngestion: its retries
 * span minutes, and a pinned delivery would wait for workers a replaced server no longer runs. One
 * activity and its retry policy: little to break on replay (webhook-delivery is in the corpus).
 */
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, webhookDelivery);
