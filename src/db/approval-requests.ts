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
 *
 * The page's requests are read first (waitingRequests), then their calls: a page's calls belong to at
 * most `limit` requests past the cursor's request and that request itself, so that many requests hold
 * the page, and a page reads about as many rows as it shows, however many wait.
 */
export function listWaitingCalls(db: Queryable, filters: WaitingFilters, page: Page): Promise<WaitingCall[]> {
  const requests = waitingRequests(filters, page);
  const calls = whereClause(requests.params);
  if (filters.toolName) calls.add('c.tool_name = ?', filters.toolName);
  return keysetPage<WaitingCall>(
    db,
    `SELECT c.*, r.agent_id, r.conversation_id, r.run_id, r.workflow_id, r.requested_at, r.expires_at,
       r.agent_name, r.agent_tags,
       (SELECT array_agg(s.tool_call_id ORDER BY s.position) FROM approval_calls s
         WHERE s.request_message_id = r.request_message_id) AS tool_call_ids
     FROM (${requests.sql}) r
     JOIN approval_calls c ON c.request_message_id = r.request_message_id`,
    calls,
    page,
    {
      key: 'r.requested_at, r.request_message_id, c.position',
      cursor: `(SELECT r2.requested_at, r2.request_message_id, c2.position FROM approval_calls c2
        JOIN approval_requests r2 ON r2.request_message_id = c2.request_message_id WHERE c2.tool_call_id = ?)`,
    },
  );
}

/** The key of the request of the call whose id is `?`: where a cursor's request lies. */
const REQUEST_OF_CALL = `(SELECT r2.requested_at, r2.request_message_id FROM approval_calls c2
  JOIN approval_requests r2 ON r2.request_message_id = c2.request_message_id WHERE c2.tool_call_id = ?)`;

/** The agent (`a`) of request `r` while `r` is the pending approval of its conversation (or agent). */
const PENDING_IN_ITS_CONVERSATION = `FROM agents a LEFT JOIN conversations cv ON cv.id = r.conversation_id
  WHERE a.id = r.agent_id
    AND coalesce(cv.pending_approval, a.pending_approval)->>'message_id' = r.request_message_id`;

/**
 * The statement of the requests that hold a page of waiting calls, with its parameters: read in the
 * page's direction from the index of waiting requests (migration 0038), from the cursor's own request
 * on, each checked against its own agent and conversation.
 */
function waitingRequests(filters: WaitingFilters, page: Page) {
  const where = whereClause();
  where.add('r.answered_at IS NULL');
  if (filters.agentIds) where.add('r.agent_id = ANY(?)', filters.agentIds);
  if (filters.requestMessageId) where.add('r.request_message_id = ?', filters.requestMessageId);
  if (filters.toolName)
    where.add(
      `EXISTS (SELECT 1 FROM approval_calls t WHERE t.request_message_id = r.request_message_id
         AND t.tool_name = ?)`,
      filters.toolName,
    );
  if (filters.olderThanSeconds !== undefined)
    where.add(`r.requested_at <= now() - make_interval(secs => ?)`, filters.olderThanSeconds);
  if (filters.newerThanSeconds !== undefined)
    where.add(`r.requested_at >= now() - make_interval(secs => ?)`, filters.newerThanSeconds);
  const asc = page.order === 'asc';
  if (page.after)
    where.add(`(r.requested_at, r.request_message_id) ${asc ? '>=' : '<='} ${REQUEST_OF_CALL}`, page.after);
  if (page.before)
    where.add(`(r.requested_at, r.request_message_id) ${asc ? '<=' : '>='} ${REQUEST_OF_CALL}`, page.before);
  const tag = filters.tag ? `AND ${where.param(filters.tag)} = ANY(a.tags)` : '';
  // As keysetPage reads: paging backwards reads the other way round.
  const direction = asc !== (Boolean(page.before) && !page.after) ? 'ASC' : 'DESC';
  const count = where.param(page.limit + (page.after || page.before ? 1 : 0));
  // LIMIT 1 keeps the agent's check per request: the planner cannot join every waiting one first.
  const sql = `SELECT r.request_message_id, r.agent_id, r.conversation_id, r.run_id, r.workflow_id,
      r.requested_at, r.expires_at, w.agent_name, w.agent_tags
    FROM approval_requests r
    CROSS JOIN LATERAL (SELECT a.name AS agent_name, a.tags AS agent_tags ${PENDING_IN_ITS_CONVERSATION} ${tag}
      LIMIT 1) w
    ${where}
    ORDER BY r.requested_at ${direction}, r.request_message_id ${direction} LIMIT ${count}`;
  return { sql, params: where.params };
}

/** Whether the request is still its conversation's pending approval (listWaitingCalls' test). */
export async function stillWaits(db: Queryable, requestMessageId: string): Promise<boolean> {
  const [call] = await listWaitingCalls(db, { requestMessageId }, { limit: 1, order: 'desc' });
  return call !== undefined;
}

/** A request as a change left it: `version` names the transaction that wrote it (migration 0039). */
export interface ApprovalChange {
  request_message_id: string;
  version: string;
  /** Whether it is its conversation's pending approval, unanswered (listWaitingCalls' test). */
  waits: boolean;
}

/**
 * The requests of `agentIds` (none: all) changed by transactions from `since` on (none: from the
 * horizon on, the changes a first read must know of to tell them from later ones), and the horizon of
 * the snapshot they were read in: every transaction before it had ended, so a later read from the
 * horizon on misses no change this one did not see. Rows read: the changes since `since`.
 */
export async function approvalChangesSince(
  db: Queryable,
  since: string | undefined,
  agentIds?: string[],
): Promise<{ horizon: string; changes: ApprovalChange[] }> {
  const where = whereClause();
  if (since === undefined) where.add('r.changed_by >= pg_snapshot_xmin(pg_current_snapshot())');
  else where.add('r.changed_by >= ?::xid8', since);
  if (agentIds) where.add('r.agent_id = ANY(?)', agentIds);
  // One statement, one snapshot: the horizon is that of the snapshot the changes are read in.
  const [row] = await db.query<{ horizon: string; changes: ApprovalChange[] }>(
    `SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon,
       (SELECT coalesce(json_agg(json_build_object('request_message_id', r.request_message_id,
          'version', r.changed_by::text,
          'waits', r.answered_at IS NULL AND EXISTS (SELECT 1 ${PENDING_IN_ITS_CONVERSATION}))), '[]')
        FROM approval_requests r ${where}) AS changes`,
    where.params,
  );
  return row;
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
