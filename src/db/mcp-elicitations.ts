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

export interface McpElicitationRow {
  tool_call_id: string;
  server_id: string;
  params: ElicitRequestFormParams;
  session_id: string | null;
  resumption_token: string | null;
  answer: ElicitResult | null;
}

/** Records the server's request; a later request of the same call replaces the earlier one and its answer. */
export async function recordElicitation(
  q: Queryable,
  row: {
    toolCallId: string;
    serverId: string;
    params: ElicitRequestFormParams;
    session?: ElicitationSession;
  },
): Promise<void> {
  await q.query(
    `INSERT INTO mcp_elicitations (tool_call_id, server_id, params, session_id, resumption_token)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tool_call_id) DO UPDATE SET server_id = $2, params = $3, session_id = $4,
       resumption_token = $5, answer = NULL, created_at = now()`,
    [
      row.toolCallId,
      row.serverId,
      json(row.params),
      row.session?.sessionId ?? null,
      row.session?.resumptionToken ?? null,
    ],
  );
}

export async function getElicitation(
  q: Queryable,
  toolCallId: string,
): Promise<McpElicitationRow | undefined> {
  const [row] = await q.query<McpElicitationRow>('SELECT * FROM mcp_elicitations WHERE tool_call_id = $1', [
    toolCallId,
  ]);
  return row;
}

/** The elicitations among these calls that wait for an answer. */
export function waitingElicitations(q: Queryable, toolCallIds: string[]): Promise<McpElicitationRow[]> {
  return q.query<McpElicitationRow>(
    'SELECT * FROM mcp_elicitations WHERE tool_call_id = ANY($1) AND answer IS NULL',
    [toolCallIds],
  );
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
