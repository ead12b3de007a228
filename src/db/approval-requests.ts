/** The record of every pause for approval: what was asked, and who answered what (migration 0026). */
import type { Queryable } from './database';
import { json, keysetPage, whereClause, type Page } from './sql';
import type { ShownElicitation } from './mcp-elicitations';

/** Who answered: the password's holder, a scoped token, a signed link, or the server itself. */
export interface Answerer {
  kind: 'password' | 'open_access' | 'token' | 'signed_link' | 'timeout' | 'cancel';
  /** The token's id, the link's id; none for the rest. */
  id?: string;
  /** The name the person gave (`X-Letta-Approver`): said, not proven. */
  name?: string;
  /** A token's app, a link's webhook. */
  via?: string;
}

/** What became of a call: approved (as asked or with edited arguments), denied, or the client's return. */
export type CallDecision = 'approved' | 'denied' | 'client_return';

export interface ApprovalCallRow {
  tool_call_id: string;
  request_message_id: string;
  position: number;
  tool_name: string;
  /** The model's arguments, as JSON text: what the approver saw. */
  arguments: string;
  /** `elicitation`: the call is running, and its MCP server asks the user what `elicitation` shows. */
  kind: 'approval' | 'client_tool' | 'elicitation';
  elicitation: ShownElicitation | null;
  decision: CallDecision | null;
  reason: string | null;
  /** The arguments the call ran with instead, as JSON text, when the approver edited them. */
  edited_arguments: string | null;
}

export interface ApprovalRequestRow {
  request_message_id: string;
  agent_id: string;
  conversation_id: string | null;
  run_id: string;
  workflow_id: string;
  requested_at: Date;
  expires_at: Date | null;
  blocks: { label: string; value: string }[];
  answer_run_id: string | null;
  answered_at: Date | null;
  answered_by: Answerer | null;
  /** answered, expired or cancelled; null while it waits. */
  outcome: 'answered' | 'expired' | 'cancelled' | null;
}

export type NewApprovalRequest = Pick<
  ApprovalRequestRow,
  | 'request_message_id'
  | 'agent_id'
  | 'conversation_id'
  | 'run_id'
  | 'workflow_id'
  | 'requested_at'
  | 'expires_at'
> & { calls: Pick<ApprovalCallRow, 'tool_call_id' | 'tool_name' | 'arguments' | 'kind' | 'elicitation'>[] };

/** Records a pause with the agent's blocks as they are in this transaction. */
export async function insertApprovalRequest(tx: Queryable, request: NewApprovalRequest): Promise<void> {
  await tx.query(
    `INSERT INTO approval_requests (request_message_id, agent_id, conversation_id, run_id, workflow_id,
       requested_at, expires_at, blocks)
     VALUES ($1, $2, $3, $4, $5, $6, $7,
       (SELECT coalesce(jsonb_agg(jsonb_build_object('label', b.label, 'value', b.value)
          ORDER BY ab.position, b.created_at), '[]')
        FROM blocks b JOIN agent_blocks ab ON ab.block_id = b.id WHERE ab.agent_id = $2))
     ON CONFLICT (request_message_id) DO NOTHING`,
    [
      request.request_message_id,
      request.agent_id,
      request.conversation_id,
      request.run_id,
      request.workflow_id,
      request.requested_at,
      request.expires_at,
    ],
  );
  await tx.query(
    `INSERT INTO approval_calls (tool_call_id, request_message_id, position, tool_name, arguments, kind,
       elicitation)
     SELECT c->>'tool_call_id', $1, (ord - 1)::int, c->>'tool_name', c->>'arguments', c->>'kind',
       CASE WHEN json_typeof(c->'elicitation') = 'object' THEN c->'elicitation' END
     FROM json_array_elements($2::json) WITH ORDINALITY AS t(c, ord)
     ON CONFLICT (tool_call_id) DO NOTHING`,
    [request.request_message_id, json(request.calls)],
  );
}

export interface RecordedDecision {
  tool_call_id: string;
  decision: CallDecision;
  reason: string | null;
  edited_arguments: string | null;
}

/** Stores the answer to a pause: who, when, under which run, and each call's decision. */
export async function recordDecisions(
  tx: Queryable,
  requestMessageId: string,
  answer: {
    answerRunId: string;
    answeredBy: Answerer;
    outcome: NonNullable<ApprovalRequestRow['outcome']>;
    decisions: RecordedDecision[];
  },
): Promise<void> {
  await tx.query(
    `UPDATE approval_requests SET answer_run_id = $2, answered_at = now(), answered_by = $3, outcome = $4
     WHERE request_message_id = $1`,
    [requestMessageId, answer.answerRunId, json(answer.answeredBy), answer.outcome],
  );
  await tx.query(
    `UPDATE approval_calls c SET decision = d.decision, reason = d.reason,
       edited_arguments = d.edited_arguments
     FROM jsonb_to_recordset($2::jsonb) AS d(tool_call_id text, decision text, reason text,
       edited_arguments text)
     WHERE c.request_message_id = $1 AND c.tool_call_id = d.tool_call_id`,
    [requestMessageId, json(answer.decisions)],
  );
}

/** A waiting call with its request and agent, as the inbox lists it. */
export type WaitingCall = ApprovalCallRow &
  Pick<
    ApprovalRequestRow,
    'agent_id' | 'conversation_id' | 'run_id' | 'workflow_id' | 'requested_at' | 'expires_at'
  > & { agent_name: string; agent_tags: string[]; tool_call_ids: string[] };

export interface WaitingFilters {
  agentIds?: string[];
  requestMessageId?: string;
  toolName?: string;
  tag?: string;
  olderThanSeconds?: number;
  newerThanSeconds?: number;
}

/**
 * The calls waiting now, newest request first. A request counts while it is the pending approval of
 * its conversation: the record of a pause whose conversation or agent is gone is not listed.
 */
export function listWaitingCalls(db: Queryable, filters: WaitingFilters, page: Page): Promise<WaitingCall[]> {
  const where = whereClause();
  where.add('r.answered_at IS NULL');
  where.add(`coalesce(cv.pending_approval, a.pending_approval)->>'message_id' = r.request_message_id`);
  if (filters.agentIds) where.add('r.agent_id = ANY(?)', filters.agentIds);
  if (filters.requestMessageId) where.add('r.request_message_id = ?', filters.requestMessageId);
  if (filters.toolName) where.add('c.tool_name = ?', filters.toolName);
  if (filters.tag) where.add('? = ANY(a.tags)', filters.tag);
  if (filters.olderThanSeconds !== undefined)
    where.add(`r.requested_at <= now() - make_interval(secs => ?)`, filters.olderThanSeconds);
  if (filters.newerThanSeconds !== undefined)
    where.add(`r.requested_at >= now() - make_interval(secs => ?)`, filters.newerThanSeconds);
  return keysetPage<WaitingCall>(
    db,
    `SELECT c.*, r.agent_id, r.conversation_id, r.run_id, r.workflow_id, r.requested_at, r.expires_at,
       a.name AS agent_name, a.tags AS agent_tags,
       (SELECT array_agg(s.tool_call_id ORDER BY s.position) FROM approval_calls s
         WHERE s.request_message_id = r.request_message_id) AS tool_call_ids
     FROM approval_calls c
     JOIN approval_requests r ON r.request_message_id = c.request_message_id
     JOIN agents a ON a.id = r.agent_id
     LEFT JOIN conversations cv ON cv.id = r.conversation_id`,
    where,
    page,
    {
      key: 'r.requested_at, r.request_message_id, c.position',
      cursor: `(SELECT r2.requested_at, r2.request_message_id, c2.position FROM approval_calls c2
        JOIN approval_requests r2 ON r2.request_message_id = c2.request_message_id WHERE c2.tool_call_id = ?)`,
    },
  );
}

/** Whether the request is still its conversation's pending approval (listWaitingCalls' test). */
export async function stillWaits(db: Queryable, requestMessageId: string): Promise<boolean> {
  const [call] = await listWaitingCalls(db, { requestMessageId }, { limit: 1, order: 'desc' });
  return call !== undefined;
}

export type ApprovalRecord = ApprovalRequestRow & { calls: ApprovalCallRow[] };

// json, not jsonb: an elicitation's requested schema keeps its fields' order.
const RECORD = `SELECT r.*, (SELECT coalesce(json_agg(to_json(c) ORDER BY c.position), '[]')
    FROM approval_calls c WHERE c.request_message_id = r.request_message_id) AS calls
  FROM approval_requests r`;

export async function getApprovalRecord(
  db: Queryable,
  requestMessageId: string,
): Promise<ApprovalRecord | undefined> {
  const [row] = await db.query<ApprovalRecord>(`${RECORD} WHERE r.request_message_id = $1`, [
    requestMessageId,
  ]);
  return row;
}

/** The pauses a run made or answered, oldest first: its audit trail. */
export function approvalRecordsOfRun(db: Queryable, runId: string): Promise<ApprovalRecord[]> {
  return db.query<ApprovalRecord>(
    `${RECORD} WHERE r.run_id = $1 OR r.answer_run_id = $1 ORDER BY r.requested_at`,
    [runId],
  );
}

/** Marks a signed link used; false when it was used before. */
export async function useApprovalLink(tx: Queryable, linkId: string): Promise<boolean> {
  const rows = await tx.query(
    'INSERT INTO approval_link_uses (link_id) VALUES ($1) ON CONFLICT DO NOTHING RETURNING link_id',
    [linkId],
  );
  return rows.length === 1;
}
