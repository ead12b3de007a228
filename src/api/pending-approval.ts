import type { Queryable } from '../db';
import { getMessage } from '../db/messages';
import type { PendingApproval } from '../db/rows';
import { lettaMessages } from './letta-shapes';

/**
 * What a paused agent waits for, as Letta shows it (its ApprovalRequestMessage), plus since when it
 * waits and until when (`expires_at`, null without an approval timeout).
 */
export async function pendingApprovalView(db: Queryable, pending: PendingApproval | null) {
  if (!pending) return null;
  const message = await getMessage(db, pending.message_id);
  const request =
    message && lettaMessages(message).find((m) => m.message_type === 'approval_request_message');
  return request ? { ...request, requested_at: pending.requested_at, expires_at: pending.expires_at } : null;
}
