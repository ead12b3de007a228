/**
 * Webhooks the server calls: a run's completion callback (Letta's `callback_url`). Each is delivered by
 * a workflow of its own (workflows/webhook-delivery.ts), retried with backoff until the receiver
 * answers 2xx, and signed so that the receiver can tell it came from this deployment:
 *
 *   X-Letta-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the webhook secret>
 *
 * The secret is WEBHOOK_SECRET, or one made for the deployment on first use (server_metadata).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Queryable } from '../db';
import { OutboundRefused, safeFetch, type OutboundPolicy } from '../net/safe-fetch';
import { invalid } from '../errors';
import { refusal, withoutBrackets, type PrivateAllowList } from '../net/private-addresses';
import { isIP } from 'node:net';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { runCallback } from '../../workflows/run-callback';
import { scopedId, type StepServices } from './steps';

export const SIGNATURE_HEADER = 'X-Letta-Signature';

export function signature(secret: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return `t=${timestamp},v1=${mac}`;
}

/** Whether `header` signs `body` under `secret`, made within `toleranceSeconds` of `now`. */
export function verifySignature(
  secret: string,
  header: string,
  body: string,
  { toleranceSeconds = 300, now = Date.now() } = {},
): boolean {
  const parts = Object.fromEntries(header.split(',').map((part) => part.trim().split('=', 2)));
  const timestamp = Number(parts.t);
  if (!Number.isInteger(timestamp) || Math.abs(now / 1000 - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(signature(secret, timestamp, body));
  const given = Buffer.from(header.trim());
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** The deployment's webhook secret: WEBHOOK_SECRET, else one made once and kept in the database. */
export async function webhookSecret(db: Queryable, configured: string | undefined): Promise<string> {
  if (configured) return configured;
  await db.query(
    `INSERT INTO server_metadata (key, value) VALUES ('webhook_secret', $1) ON CONFLICT (key) DO NOTHING`,
    [randomBytes(32).toString('hex')],
  );
  const [row] = await db.query<{ value: string }>(
    `SELECT value FROM server_metadata WHERE key = 'webhook_secret'`,
  );
  return row.value;
}

/**
 * A caller's webhook URL, checked as it is given: http(s), and not a private address (unless
 * OUTBOUND_ALLOW_PRIVATE allows it) when it is one literally. A host name is judged at each delivery,
 * by the addresses it then has.
 */
export function checkWebhookUrl(text: string, allow: PrivateAllowList): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(`callback_url is not a URL: ${JSON.stringify(text)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalid(`callback_url must be an http or https URL, not ${url.protocol}`);
  const host = withoutBrackets(url.hostname);
  const reason = isIP(host) ? refusal(url.hostname, host, allow) : undefined;
  if (reason) throw invalid(`callback_url is refused: ${reason}`);
  return url.href;
}

/** What one attempt got: the receiver's status, or why there was none. */
export interface DeliveryAttempt {
  statusCode: number | null;
  error: string | null;
}

/** POSTs `payload` to `url`, signed; never throws: the attempt says how it went. */
export async function postSigned(
  url: string,
  payload: unknown,
  secret: string,
  policy: OutboundPolicy,
): Promise<DeliveryAttempt> {
  const body = JSON.stringify(payload);
  try {
    const response = await safeFetch(new URL(url), {
      ...policy,
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'letta-temporal-webhook',
        [SIGNATURE_HEADER]: signature(secret, Math.floor(Date.now() / 1000), body),
      },
    });
    const ok = response.status >= 200 && response.status < 300;
    return { statusCode: response.status, error: ok ? null : `the receiver answered ${response.status}` };
  } catch (error) {
    const reason = error instanceof OutboundRefused ? `refused: ${error.message}` : (error as Error).message;
    return { statusCode: null, error: `could not deliver to ${url}: ${reason}` };
  }
}

/** Starts the delivery of a run's callback; its workflow id is the run's, so it starts once. */
export async function startRunCallback(services: StepServices, runId: string): Promise<void> {
  const { config } = services;
  try {
    await services.temporal.workflow.start<typeof runCallback>('runCallback', {
      workflowId: scopedId(services.deploymentId, `callback/${runId}`),
      taskQueue: services.taskQueues.agent,
      args: [
        {
          runId,
          maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
          initialRetryMs: config.WEBHOOK_RETRY_INITIAL_MS,
          maxRetryMs: config.WEBHOOK_RETRY_MAX_MS,
          timeoutMs: config.WEBHOOK_TIMEOUT_MS,
        },
      ],
      staticSummary: `Completion callback of ${runId}`,
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

/** Where and how far a webhook delivery may go. */
export const webhookPolicy = (config: StepServices['config']): OutboundPolicy => ({
  timeoutMs: config.WEBHOOK_TIMEOUT_MS,
  maxBytes: 64 * 1024,
  maxRedirects: 0,
  allow: config.OUTBOUND_ALLOW_PRIVATE,
});
