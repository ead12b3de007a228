/** MCP elicitations that pause a turn (migration 0028): what the server asked, and the answer. */
import type { ElicitRequestFormParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { Queryable } from './database';
import { json } from './sql';

/** Where a call that a worker no longer holds is taken up again: its server's session. */
export interface ElicitationSession {
  sessionId: string;
  /** The last event id before the elicitation request, so that the server sends that request again. */
  resumptionToken: string;
}

/**
 * Where a call paused on an input-required result (MCP 2026-07-28, SEP-2322) stands: what its retry
 * sends back. Nothing of the call is held anywhere else.
 */
export interface InputRetry {
  /** The server's opaque `requestState`, echoed unchanged; absent when it sent none. */
  requestState?: string;
  /** The server's elicitations not answered yet, by their keys: the first is the one asked now. */
  asked: Record<string, ElicitRequestFormParams>;
  /** The answers given so far, by the keys of their requests. */
  answered: Record<string, ElicitResult>;
}

export interface McpElicitationRow {
  tool_call_id: string;
  server_id: string;
  params: ElicitRequestFormParams;
  session_id: string | null;
  resumption_token: string | null;
  answer: ElicitResult | null;
  /** Set for a call paused on an input-required result: answered by calling the tool again. */
  retry?: InputRetry;
}

/** The key `params` keeps an input-required pause's retry under (the column is the server's JSON). */
const RETRY_KEY = 'io.letta/retry';

type StoredParams = ElicitRequestFormParams & { [RETRY_KEY]?: InputRetry };

/** A row as read: the retry taken out of the stored params. */
export function elicitationOf(row: McpElicitationRow): McpElicitationRow {
  const { [RETRY_KEY]: retry, ...params } = row.params as StoredParams;
  return { ...row, params: params as ElicitRequestFormParams, ...(retry ? { retry } : {}) };
}

/** Records the server's request; a later request of the same call replaces the earlier one and its answer. */
export async function recordElicitation(
  q: Queryable,
  row: {
    toolCallId: string;
    serverId: string;
    params: ElicitRequestFormParams;
    session?: ElicitationSession;
    retry?: InputRetry;
  },
): Promise<void> {
  const params: StoredParams = row.retry ? { ...row.params, [RETRY_KEY]: row.retry } : row.params;
  await q.query(
    `INSERT INTO mcp_elicitations (tool_call_id, server_id, params, session_id, resumption_token)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tool_call_id) DO UPDATE SET server_id = $2, params = $3, session_id = $4,
       resumption_token = $5, answer = NULL, created_at = now()`,
    [
      row.toolCallId,
      row.serverId,
      json(params),
      row.session?.sessionId ?? null,
      row.session?.resumptionToken ?? null,
    ],
  );
}

/** The elicitations among these calls that wait for an answer. */
export async function waitingElicitations(q: Queryable, toolCallIds: string[]): Promise<McpElicitationRow[]> {
  const rows = await q.query<McpElicitationRow>(
    'SELECT * FROM mcp_elicitations WHERE tool_call_id = ANY($1) AND answer IS NULL',
    [toolCallIds],
  );
  return rows.map(elicitationOf);
}

export async function setElicitationAnswer(
  q: Queryable,
  toolCallId: string,
  answer: ElicitResult,
): Promise<void> {
  await q.query('UPDATE mcp_elicitations SET answer = $2 WHERE tool_call_id = $1', [
    toolCallId,
    json(answer),
  ]);
}

/** An elicitation as an approval request shows it (an extension of Letta's approval request message). */
export interface ShownElicitation {
  tool_call_id: string;
  /** What the server asks the user. */
  message: string;
  /** The form's JSON schema: a flat object of primitive fields, as the MCP spec restricts it. */
  requested_schema: Record<string, unknown>;
  server: string;
  server_id: string;
}
