/** The approval inbox's answers: a waiting call, and a pause with its answer (the audit record). */
import type { z } from 'zod';
import type { TemporalSettings } from '../temporal/settings';

/** Where the Temporal Web UI is, for links to a paused turn. */
type TemporalUi = Pick<
  TemporalSettings,
  'TEMPORAL_UI_URL' | 'TEMPORAL_ADDRESS' | 'TEMPORAL_UI_PORT' | 'TEMPORAL_NAMESPACE'
>;
import type { Queryable } from '../db';
import type { ApprovalRecord, WaitingCall } from '../db/approval-requests';
import { toolsWhere } from '../db/tools';
import type { WaitingApprovalSchema } from './schemas/approvals';

const iso = (date: Date | null) => (date ? new Date(date).toISOString() : null);

/** Where an operator sees a paused turn: the Temporal UI's page of its workflow. */
export function temporalUrlOf(config: TemporalUi, workflowId: string): string | null {
  const ui =
    config.TEMPORAL_UI_URL ??
    (config.TEMPORAL_ADDRESS ? undefined : `http://127.0.0.1:${config.TEMPORAL_UI_PORT}`);
  if (!ui) return null;
  const base = ui.replace(/\/$/, '');
  return `${base}/namespaces/${encodeURIComponent(config.TEMPORAL_NAMESPACE)}/workflows/${encodeURIComponent(workflowId)}`;
}

export const waitingShape = (
  config: TemporalUi,
  call: WaitingCall,
): z.infer<typeof WaitingApprovalSchema> => ({
  id: call.tool_call_id,
  approval_request_id: call.request_message_id,
  tool_call_id: call.tool_call_id,
  tool_name: call.tool_name,
  arguments: call.arguments,
  kind: call.kind,
  elicitation: call.elicitation ?? null,
  agent_id: call.agent_id,
  agent_name: call.agent_name,
  agent_tags: call.agent_tags,
  conversation_id: call.conversation_id,
  run_id: call.run_id,
  requested_at: iso(call.requested_at)!,
  expires_at: iso(call.expires_at),
  tool_call_ids: call.tool_call_ids,
  temporal_url: temporalUrlOf(config, call.workflow_id),
});

/** A pause as the audit trail shows it (also under GET /v1/runs/{run_id}, `approvals`). */
export async function approvalRecordShape(db: Queryable, record: ApprovalRecord, pending: boolean) {
  const served = record.calls.filter((call) => call.kind === 'approval').map((call) => call.tool_name);
  const tools = new Map((await toolsWhere(db, 'name', served)).map((tool) => [tool.name, tool]));
  const parametersOf = (call: ApprovalRecord['calls'][number]) =>
    call.kind === 'approval'
      ? ((tools.get(call.tool_name)?.json_schema as { parameters?: Record<string, unknown> } | undefined)
          ?.parameters ?? null)
      : null;
  return {
    approval_request_id: record.request_message_id,
    agent_id: record.agent_id,
    conversation_id: record.conversation_id,
    run_id: record.run_id,
    status: pending ? ('pending' as const) : (record.outcome ?? ('cancelled' as const)),
    requested_at: iso(record.requested_at)!,
    expires_at: iso(record.expires_at),
    answer_run_id: record.answer_run_id,
    answered_at: iso(record.answered_at),
    answered_by: record.answered_by,
    tool_calls: record.calls.map((call) => ({
      tool_call_id: call.tool_call_id,
      tool_name: call.tool_name,
      arguments: call.arguments,
      kind: call.kind,
      parameters: parametersOf(call),
      elicitation: call.elicitation ?? null,
      decision: call.decision,
      reason: call.reason,
      edited_arguments: call.edited_arguments,
    })),
  };
}
