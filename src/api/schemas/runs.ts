import { z } from 'zod';
import { LettaMessageSchema, RunSchema } from './responses';
import { ApprovalRecordSchema } from './approvals';

type MessageForm = (typeof LettaMessageSchema.options)[number];

/** Letta's ApprovalRequestMessage: the form of LettaMessage a paused turn's tool calls are shown in. */
const ApprovalRequestMessageSchema = LettaMessageSchema.options.find(
  (form) => form.shape.message_type.value === 'approval_request_message',
) as Extract<MessageForm, { shape: { message_type: z.ZodLiteral<'approval_request_message'> } }>;

/** What a paused run waits for (pendingApprovalView): its approval request, since when and until when. */
export const PendingApprovalSchema = ApprovalRequestMessageSchema.extend({
  requested_at: z.string(),
  /** When the pending calls are denied for want of an answer; null: never. */
  expires_at: z.string().nullable(),
}).meta({ id: 'PendingApproval' });

/** A run as `GET /v1/runs/:runId` answers: with what it waits for, if it is the one paused for approval. */
export const RunWithPendingApprovalSchema = RunSchema.extend({
  pending_approval: PendingApprovalSchema.nullable(),
  approvals: z.array(ApprovalRecordSchema).describe('an extension: the pauses the run made or answered'),
}).meta({ id: 'RunWithPendingApproval' });
