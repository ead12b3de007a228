/**
 * Webhooks the server calls: a run's completion callback (Letta's `callback_url`), and approval notices
 * (a turn paused for approval, still unanswered after its policy's reminder delay, or its approval
 * expired) to the agent's `metadata.approval_webhook_url`
 * or APPROVAL_WEBHOOK_URL. Each is delivered by a workflow of its own (workflows/webhook-delivery.ts),
 * retried with backoff until the receiver answers 2xx, and signed so that the receiver can tell it came
 * from this deployment:
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
import { publicBaseUrl } from '../net/hosts';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Workflows } from '../../contracts/workflows';
import type { WebhookSubject } from '../../contracts/payloads';
import { getAgentRow } from '../db/agents';
import { pendingApproval } from '../db/conversations';
import { getMessage } from '../db/messages';
import { getApprovalRecord } from '../db/approval-requests';
import { approvalLinks } from '../approvals/links';
import { scopedId, type TurnServices } from './turns';

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
  // server_metadata.value is jsonb: the secret is kept as a JSON string, and read back as its text.
  await db.query(
    `INSERT INTO server_metadata (key, value) VALUES ('webhook_secret', to_jsonb($1::text))
     ON CONFLICT (key) DO NOTHING`,
    [randomBytes(32).toString('hex')],
  );
  const [row] = await db.query<{ secret: string }>(
    `SELECT value #>> '{}' AS secret FROM server_metadata WHERE key = 'webhook_secret'`,
  );
  return row.secret;
}

/**
 * A caller's webhook URL, checked as it is given: http(s), and not a private address (unless
 * OUTBOUND_ALLOW_PRIVATE allows it) when it is one literally. A host name is judged at each delivery,
 * by the addresses it then has.
 */
export function checkWebhookUrl(text: string, allow: PrivateAllowList, field = 'callback_url'): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(`${field} is not a URL: ${JSON.stringify(text)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalid(`${field} must be an http or https URL, not ${url.protocol}`);
  const host = withoutBrackets(url.hostname);
  const reason = isIP(host) ? refusal(url.hostname, host, allow) : undefined;
  if (reason) throw invalid(`${field} is refused: ${reason}`);
  return url.href;
}

/** An agent's `metadata.approval_webhook_url`, checked as a callback URL is (400 if refused). */
export function checkApprovalWebhook(
  metadata: Record<string, unknown> | null | undefined,
  config: { OUTBOUND_ALLOW_PRIVATE: PrivateAllowList },
): void {
  const url = metadata?.approval_webhook_url;
  if (url === undefined || url === null) return;
  const field = 'metadata.approval_webhook_url';
  if (typeof url !== 'string') throw invalid(`${field} must be a URL`);
  checkWebhookUrl(url, config.OUTBOUND_ALLOW_PRIVATE, field);
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

/** Where an agent's approval notices go: its own `metadata.approval_webhook_url`, else the server's. */
export function approvalWebhookUrl(
  agent: { metadata: Record<string, unknown> | null },
  configured: string | undefined,
): string | undefined {
  const own = agent.metadata?.approval_webhook_url;
  return typeof own === 'string' && own ? own : configured;
}

/**
 * Starts the delivery of a webhook, unless it has nowhere to go (an approval notice of an agent with no
 * approval webhook). Its workflow id names what it tells, so it starts once.
 */
export async function startWebhook(services: TurnServices, subject: WebhookSubject): Promise<void> {
  const { config } = services;
  if (subject.kind !== 'run_callback') {
    const agent = await getAgentRow(services.db, subject.agentId);
    if (!agent || !approvalWebhookUrl(agent, config.APPROVAL_WEBHOOK_URL)) return;
  }
  try {
    await services.temporal.workflow.start<Workflows['webhookDelivery']>('webhookDelivery', {
      workflowId: scopedId(services.deploymentId, `webhook/${subject.kind}/${subject.id}`),
      taskQueue: services.taskQueues.agent,
      args: [
        {
          subject,
          maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
          initialRetryMs: config.WEBHOOK_RETRY_INITIAL_MS,
          maxRetryMs: config.WEBHOOK_RETRY_MAX_MS,
          timeoutMs: config.WEBHOOK_TIMEOUT_MS,
        },
      ],
      staticSummary: `Webhook ${subject.kind} of ${subject.id}`,
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

/**
 * An approval notice: the request's pending calls and how to answer them (a `messages.create` with an
 * approval), first as it is made and again as its reminder, or that it expired and its calls were denied.
 */
export async function approvalNotice(db: Queryable, subject: WebhookSubject, links?: LinkMaker) {
  const request = await getMessage(db, subject.id);
  if (!request) return undefined;
  const scope = { agentId: subject.agentId, conversationId: request.conversation_id };
  const pending = await pendingApproval(db, scope);
  const waiting =
    (request.metadata?.approval_request as { tool_call_ids?: string[] } | undefined)?.tool_call_ids ?? [];
  const calls = (request.tool_calls ?? []).filter((call) => waiting.includes(call.id));
  const common = {
    event: subject.kind,
    agent_id: subject.agentId,
    conversation_id: request.conversation_id,
    run_id: request.run_id,
    approval_request_id: request.id,
    tool_calls: calls.map((call) => ({ tool_call_id: call.id, name: call.name, arguments: call.arguments })),
  };
  if (subject.kind === 'approval_expired') return common;
  const stillPending = pending?.message_id === request.id;
  const record = stillPending && links ? await getApprovalRecord(db, request.id) : undefined;
  const forPeople = record?.calls.every((call) => call.kind === 'approval');
  return {
    ...common,
    pending: stillPending,
    expires_at: stillPending ? pending.expires_at : null,
    // Signed links answer every call of the request at once; a client's tool return is the client's.
    links: forPeople ? await links!({ requestId: request.id, expiresAt: pending!.expires_at }) : null,
    answer: {
      method: 'POST',
      path: request.conversation_id
        ? `/v1/conversations/${request.conversation_id}/messages`
        : `/v1/agents/${subject.agentId}/messages`,
      body: {
        messages: [
          {
            type: 'approval',
            approvals: calls.map((call) => ({
              type: 'approval',
              tool_call_id: call.id,
              approve: true,
              reason: null,
            })),
          },
        ],
      },
    },
  };
}

/** Makes a pause's signed approve and deny links (src/approvals/links.ts). */
export type LinkMaker = (pause: {
  requestId: string;
  expiresAt: string | null;
  /** The host the notice goes to, named in the audit trail of an answer by its link. */
  via?: string;
}) => Promise<{ approve: string; deny: string; expires_at: string }>;

/**
 * The links' maker, or none when APPROVAL_LINK_TTL_SECONDS is 0. They point at LETTA_PUBLIC_URL, else
 * at the address the API listens on.
 */
export function linkMaker(db: Queryable, config: TurnServices['config']): LinkMaker | undefined {
  if (config.APPROVAL_LINK_TTL_SECONDS === 0) return undefined;
  const baseUrl = publicBaseUrl(config);
  return async (pause) =>
    approvalLinks(
      await webhookSecret(db, config.WEBHOOK_SECRET),
      {
        baseUrl,
        ttlSeconds: config.APPROVAL_LINK_TTL_SECONDS,
      },
      pause,
    );
}

/** Where and how far a webhook delivery may go. */
export const webhookPolicy = (config: TurnServices['config']): OutboundPolicy => ({
  timeoutMs: config.WEBHOOK_TIMEOUT_MS,
  maxBytes: 64 * 1024,
  maxRedirects: 0,
  allow: config.OUTBOUND_ALLOW_PRIVATE,
});
