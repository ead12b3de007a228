/** The approval inbox's queries and answers (an extension: Letta has no cross-agent list of approvals). */
import { z } from 'zod';
import { pageQuery } from './common';
import { ApprovalAnswersSchema } from './messages';
import { ElicitationSchema, LettaMessageSchema } from './responses';

/** An age in seconds; at most ten billion (about 317 years), so that now less the age is a stored moment. */
const ageSeconds = z.coerce.number().nonnegative().max(1e10).optional();

export const ListApprovalsQuery = pageQuery(50, 'desc').extend({
  agent_id: z.string().optional(),
  tool_name: z.string().optional(),
  tag: z.string().optional(),
  older_than_seconds: ageSeconds,
  newer_than_seconds: ageSeconds,
});

const kind = z
  .enum(['approval', 'client_tool', 'elicitation'])
  .describe(
    '`client_tool`: the client runs it and answers with its return; `elicitation`: the call runs, and its MCP server asks what `elicitation` shows',
  );

const elicitation = ElicitationSchema.nullable().describe(
  "an extension: what the call's MCP server asks, for a call of kind `elicitation`",
);

/** One waiting tool call. */
export const WaitingApprovalSchema = z.object({
  id: z.string().describe('the tool call id (the paging cursor)'),
  approval_request_id: z.string().describe('the approval request message: its calls are answered together'),
  tool_call_id: z.string(),
  tool_name: z.string(),
  arguments: z.string().describe('as the model sent them (JSON text)'),
  kind,
  elicitation,
  agent_id: z.string(),
  agent_name: z.string(),
  agent_tags: z.array(z.string()),
  conversation_id: z.string().nullable(),
  run_id: z.string(),
  requested_at: z.string(),
  expires_at: z.string().nullable(),
  tool_call_ids: z.array(z.string()).describe('every waiting call of the request, in order'),
  temporal_url: z.string().nullable().describe('the paused turn in the Temporal UI'),
});

const AnswererSchema = z.object({
  kind: z.enum(['password', 'open_access', 'token', 'signed_link', 'timeout', 'cancel']),
  id: z.string().optional(),
  name: z.string().optional().describe('the name the person gave (X-Letta-Approver): said, not proven'),
  via: z.string().optional(),
});

const CallRecordSchema = z.object({
  tool_call_id: z.string(),
  tool_name: z.string(),
  arguments: z.string().describe('what the approver saw'),
  kind,
  parameters: z.record(z.string(), z.unknown()).nullable().describe("the tool's parameters (JSON schema)"),
  elicitation,
  decision: z.enum(['approved', 'denied', 'client_return']).nullable(),
  reason: z.string().nullable(),
  edited_arguments: z.string().nullable().describe('the arguments the call ran with, when edited'),
});

/** A pause and its answer: the audit record. */
export const ApprovalRecordSchema = z.object({
  approval_request_id: z.string(),
  agent_id: z.string(),
  conversation_id: z.string().nullable(),
  run_id: z.string(),
  status: z.enum(['pending', 'answered', 'expired', 'cancelled']),
  requested_at: z.string(),
  expires_at: z.string().nullable(),
  answer_run_id: z.string().nullable(),
  answered_at: z.string().nullable(),
  answered_by: AnswererSchema.nullable(),
  tool_calls: z.array(CallRecordSchema),
});

/** A pause with what the approver needs to judge it. */
export const ApprovalDetailSchema = ApprovalRecordSchema.extend({
  agent_name: z.string().nullable(),
  blocks: z.array(z.object({ label: z.string(), value: z.string() })).describe('memory as it was'),
  messages: z.array(LettaMessageSchema).describe('the last messages up to the request, oldest first'),
  temporal_url: z.string().nullable(),
});

export const AnswerApprovalSchema = z.object({ approvals: ApprovalAnswersSchema.min(1) });

export const AnsweredApprovalSchema = z.object({
  approval_request_id: z.string(),
  run_id: z.string().describe('the run the turn goes on under'),
  status: z.string(),
});
