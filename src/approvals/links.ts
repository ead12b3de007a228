/**
 * Signed links to approve or deny a pause, carried by its approval webhook, so that a chat bot or an
 * e-mail can act on it without the password. A link names the approval request and the decision, and
 * expires (APPROVAL_LINK_TTL_SECONDS, and never after the pause's own expiry); it is signed with the
 * deployment's webhook secret, under a purpose of its own so that no webhook signature can pass for a
 * link, and it works once (approval_link_uses). Opening a link only shows what it would do: link
 * previews and mail scanners open links, so the decision is a POST.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const PURPOSE = 'letta-approval-link';

export type LinkDecision = 'approve' | 'deny';

/** What a link says: the request, the decision, its expiry (unix seconds), its id, who it was sent to. */
export interface LinkClaims {
  request: string;
  decision: LinkDecision;
  expires: number;
  id: string;
  /** The host of the webhook that carried the link, for the audit trail. */
  via?: string;
}

const mac = (secret: string, payload: string) =>
  createHmac('sha256', secret).update(`${PURPOSE}.${payload}`).digest('base64url');

export function signLink(secret: string, claims: LinkClaims): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${payload}.${mac(secret, payload)}`;
}

/** The claims of a link signed with `secret` that has not expired; undefined for anything else. */
export function verifyLink(secret: string, token: string, now = Date.now()): LinkClaims | undefined {
  const [payload, signature, extra] = token.split('.');
  if (!payload || !signature || extra !== undefined) return undefined;
  const expected = Buffer.from(mac(secret, payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
  let claims: LinkClaims;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as LinkClaims;
  } catch {
    return undefined;
  }
  if (typeof claims.expires !== 'number' || claims.expires * 1000 <= now) return undefined;
  return claims;
}

export interface LinkOptions {
  /** The server's address as the links' readers reach it. */
  baseUrl: string;
  ttlSeconds: number;
}

/** The approve and deny links of a pause, for one notice. */
export function approvalLinks(
  secret: string,
  options: LinkOptions,
  pause: { requestId: string; expiresAt: string | null; via?: string },
) {
  const ttlEnd = Math.floor(Date.now() / 1000) + options.ttlSeconds;
  const pauseEnd = pause.expiresAt ? Math.floor(Date.parse(pause.expiresAt) / 1000) : Infinity;
  const expires = Math.min(ttlEnd, pauseEnd);
  const link = (decision: LinkDecision) => {
    const claims = { request: pause.requestId, decision, expires, id: randomBytes(12).toString('base64url') };
    const token = signLink(secret, { ...claims, ...(pause.via ? { via: pause.via } : {}) });
    return `${options.baseUrl.replace(/\/$/, '')}/approvals/act/${token}`;
  };
  return { approve: link('approve'), deny: link('deny'), expires_at: new Date(expires * 1000).toISOString() };
}
