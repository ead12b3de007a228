/**
 * MCP elicitations as approval pauses: what an approval request shows of each (the server's message
 * and requested schema), and what an answer to the pause sends each server
 * (src/approvals/elicitation-answers.ts).
 */
import type { ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { Queryable } from '../db';
import {
  setElicitationAnswer,
  waitingElicitations,
  type McpElicitationRow,
  type ShownElicitation,
} from '../db/mcp-elicitations';
import type { PendingApproval } from '../db/rows';
import type { Answerer } from '../db/approval-requests';
import { invalid } from '../errors';
import { ElicitationContentError, elicitResultOf } from './elicitation-answers';
import type { ApprovalAnswer } from './answers';

/** The waiting elicitations of these calls, as an approval request shows them. */
export async function shownElicitations(q: Queryable, toolCallIds: string[]): Promise<ShownElicitation[]> {
  const rows = await q.query<McpElicitationRow & { server_name: string | null }>(
    `SELECT e.*, s.server_name FROM mcp_elicitations e LEFT JOIN mcp_servers s ON s.id = e.server_id
     WHERE e.tool_call_id = ANY($1) AND e.answer IS NULL`,
    [toolCallIds],
  );
  return rows.map((row) => ({
    tool_call_id: row.tool_call_id,
    message: row.params.message,
    requested_schema: row.params.requestedSchema as Record<string, unknown>,
    server: row.server_name ?? row.server_id,
    server_id: row.server_id,
  }));
}

/** Which of these calls have their elicitation's answer: they run again, to give it to their server. */
export async function answeredElicitations(q: Queryable, toolCallIds: string[]): Promise<string[]> {
  const rows = await q.query<{ tool_call_id: string }>(
    'SELECT tool_call_id FROM mcp_elicitations WHERE tool_call_id = ANY($1) AND answer IS NOT NULL',
    [toolCallIds],
  );
  return rows.map((row) => row.tool_call_id);
}

/**
 * Stores what each waiting elicitation of `pending` is answered: an approval accepts (its
 * `elicitation_response.content`, the schema's defaults filling what it leaves out), a denial
 * declines, an explicit `cancel` action, an expiry and a run's cancel cancel. Content that does not fit
 * the requested schema is a 400 naming the misfit, and nothing is recorded.
 */
export async function answerElicitations(
  tx: Queryable,
  pending: PendingApproval,
  answers: ApprovalAnswer[],
  answeredBy: Answerer,
): Promise<void> {
  const waiting = await waitingElicitations(tx, pending.tool_call_ids);
  const stray = answers.find(
    (a) =>
      a.type === 'approval' &&
      a.elicitation_response &&
      !waiting.some((e) => e.tool_call_id === a.tool_call_id),
  );
  if (stray)
    throw invalid(
      `Tool call ${stray.tool_call_id}: its MCP server asked nothing; elicitation_response answers a server's question`,
    );
  for (const elicitation of waiting) {
    const answer = answers.find((a) => a.tool_call_id === elicitation.tool_call_id);
    await setElicitationAnswer(tx, elicitation.tool_call_id, resultFor(elicitation, answer, answeredBy));
  }
}

function resultFor(
  elicitation: McpElicitationRow,
  answer: ApprovalAnswer | undefined,
  answeredBy: Answerer,
): ElicitResult {
  const id = elicitation.tool_call_id;
  if (answeredBy.kind === 'timeout' || answeredBy.kind === 'cancel' || !answer) return { action: 'cancel' };
  if (answer.type !== 'approval')
    throw invalid(
      `Tool call ${id}: its MCP server asks a question; answer it with an approval, not a tool return`,
    );
  if (answer.arguments)
    throw invalid(
      `Tool call ${id}: it is running already and its arguments cannot change; answer its elicitation`,
    );
  try {
    return elicitResultOf(elicitation.params, answer.approve, answer.elicitation_response);
  } catch (error) {
    if (error instanceof ElicitationContentError) throw invalid(`Tool call ${id}: ${error.message}`);
    throw error;
  }
}
