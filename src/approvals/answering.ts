/**
 * Letta's approval semantics (letta_agent_v3.py, agents/helpers.py, services/run_manager.py): what a
 * paused turn waits for, how an answer is checked and recorded, and the texts the model and the
 * caller see. Used by the API (answers from people and clients) and by activities (timeouts, cancel).
 */
import type { Queryable } from '../db';
import { Ajv } from 'ajv';
import { getMessage, insertMessage, latestAnswerNaming, messageByKey } from '../db/messages';
import { getTool, getToolVersion } from '../db/tools';
import { invalid } from '../errors';
import { insertRun } from '../db/runs';
import { observeApprovalWait, runsStarted } from '../observability/metrics';
import { runScope, setPendingApproval } from '../db/conversations';
import type { MessageRow, PendingApproval, RunRow } from '../db/rows';
import { newId } from '../ids';
import { recordDecisions, type Answerer, type RecordedDecision } from '../db/approval-requests';
import type { RecordedAnswer, TurnContext } from '../../contracts/payloads';
import type { ApprovalAnswer, ApprovalDecision, ClientToolReturn } from './answers';
import { answerElicitations } from './elicitations';
import {
  DEFAULT_IMAGE_MAX_BYTES,
  imagePart,
  limitImages,
  returnOfParts,
  type ReturnPart,
} from '../returns/return-parts';

export const ALREADY_ANSWERED =
  'Cannot process approval response: The tool call was already answered differently. Send the same answer again, or a regular message to go on.';
export const NOTHING_PENDING =
  'Cannot process approval response: No tool call is currently awaiting approval. Please send a regular message to interact with the agent.';
export const PENDING_APPROVAL_TEXT =
  'Cannot send a new message: The agent is waiting for approval on a tool call. Please approve or deny the pending request before continuing.';
/** constants.TOOL_CALL_DENIAL_ON_CANCEL */
export const CANCEL_DENIAL_REASON = 'The user cancelled the request, so the tool call was denied.';

/** The error return a denied call gives the model; Python prints a missing reason as None. */
export const denialText = (reason: string | null | undefined) =>
  `Error: request to call tool denied. User reason: ${reason ?? 'None'}`;

/** Python's repr of a list of strings, as Letta's messages print ids. */
const pythonList = (ids: string[]) => `[${ids.map((id) => `'${id}'`).join(', ')}]`;

export const invalidIdsText = (expected: string[], received: string[]) =>
  `Invalid tool call IDs. Expected '${pythonList(expected)}', but received '${pythonList(received)}'.`;

export type { ApprovalAnswer, ApprovalDecision, ClientToolReturn } from './answers';

export interface FollowUp {
  role: 'user' | 'system' | 'assistant';
  text: string;
  name?: string | null;
  otid?: string | null;
}

/** How the answer to a request message is keyed: one answer per approval request, ever. */
const answerKey = (requestMessageId: string) => `${requestMessageId}:answer`;

/** The calls `answers` leave unanswered or answer without being asked: Letta's exact-cover check. */
export function answersMismatch(pending: PendingApproval, answers: ApprovalAnswer[]): string | undefined {
  const received = answers.map((a) => a.tool_call_id);
  const expected = pending.tool_call_ids;
  const same =
    received.length === expected.length &&
    new Set(received).size === received.length &&
    received.every((id) => expected.includes(id));
  return same ? undefined : invalidIdsText(expected, received);
}

const signalFor = (message: MessageRow): RecordedAnswer => {
  const meta = message.metadata as { request_message_id: string };
  return {
    runId: message.run_id!,
    approvalMessageId: message.id,
    requestMessageId: meta.request_message_id,
    toolCallIds: (message.approvals as ApprovalAnswer[]).map((a) => a.tool_call_id),
  };
};

/**
 * Records the answer to `pending` under a new run and clears the pause: the caller holds the agent's
 * row (lockPendingApproval) and signals the workflow once the transaction has committed.
 */
export async function recordAnswer(
  tx: Queryable,
  input: {
    agentId: string;
    pending: PendingApproval;
    answers: ApprovalAnswer[];
    followUps: FollowUp[];
    /** The run the turn continues under; `newRun` creates it. */
    runId: string;
    newRun?: Pick<RunRow, 'background' | 'metadata' | 'request_config'>;
    answeredBy: Answerer;
  },
): Promise<RecordedAnswer> {
  const { agentId, pending, runId } = input;
  // The answer's run continues the paused turn in its conversation.
  const scope = await runScope(tx, pending.run_id);
  if (input.newRun) {
    await insertRun(tx, {
      ...input.newRun,
      id: runId,
      agent_id: agentId,
      workflow_id: pending.workflow_id,
      conversation_id: scope.conversationId,
    });
    runsStarted.inc();
  }
  await answerElicitations(tx, pending, input.answers, input.answeredBy);
  const message = await insertMessage(tx, {
    id: newId('message'),
    agent_id: agentId,
    run_id: runId,
    role: 'approval',
    approvals: input.answers,
    metadata: { request_message_id: pending.message_id, follow_ups: input.followUps },
    idempotency_key: answerKey(pending.message_id),
  });
  await setPendingApproval(tx, scope, null);
  const outcome = OUTCOMES[input.answeredBy.kind as keyof typeof OUTCOMES] ?? 'answered';
  await recordDecisions(tx, pending.message_id, {
    answerRunId: runId,
    answeredBy: input.answeredBy,
    outcome,
    decisions: input.answers.map(decisionRecordOf),
  });
  observeApprovalWait({
    kind: input.answers.some((answer) => answer.type === 'tool') ? 'client_tool' : 'approval',
    outcome,
    requestedAt: pending.requested_at,
  });
  return signalFor(message);
}

/** How a pause ended, by who ended it: the server's own answers are expiries and cancels. */
const OUTCOMES = { timeout: 'expired', cancel: 'cancelled' } as const;

/** An answer as the audit trail keeps it. */
const decisionRecordOf = (answer: ApprovalAnswer): RecordedDecision =>
  answer.type === 'tool'
    ? { tool_call_id: answer.tool_call_id, decision: 'client_return', reason: null, edited_arguments: null }
    : {
        tool_call_id: answer.tool_call_id,
        decision: answer.approve ? 'approved' : 'denied',
        reason: answer.reason ?? null,
        edited_arguments: answer.approve && answer.arguments ? JSON.stringify(answer.arguments) : null,
      };

/** The answer already recorded for an approval request, if any. */
export async function answerFor(
  db: Queryable,
  requestMessageId: string,
): Promise<RecordedAnswer | undefined> {
  const message = await messageByKey(db, answerKey(requestMessageId));
  return message && signalFor(message);
}

/** What an answer decides, without the fields that may differ between a request and its retry. */
const decisionOf = (answer: ApprovalAnswer) =>
  JSON.stringify(
    answer.type === 'approval'
      ? [
          answer.tool_call_id,
          answer.approve,
          answer.reason ?? null,
          answer.arguments ?? null,
          answer.elicitation_response ?? null,
        ]
      : [answer.tool_call_id, answer.status, answer.tool_return],
  );

/**
 * The agent's latest recorded answer to any of the calls `answers` name, if there is one. It `repeats`
 * when it is the same answer (a client's retry: Letta looks at the last messages the same way); any
 * other answer to a call already answered conflicts with it.
 */
export async function earlierAnswer(
  db: Queryable,
  agentId: string,
  answers: ApprovalAnswer[],
): Promise<{ answered: RecordedAnswer; repeats: boolean } | undefined> {
  const latest = await latestAnswerNaming(
    db,
    agentId,
    answers.map((a) => a.tool_call_id),
  );
  if (!latest) return undefined;
  const answered = signalFor(latest);
  const recorded = latest.approvals as ApprovalAnswer[];
  // Letta's legacy form names the one pending call by its approval request's id.
  const named = answers.map((a) =>
    a.tool_call_id === answered.requestMessageId && recorded.length === 1
      ? { ...a, tool_call_id: recorded[0].tool_call_id }
      : a,
  );
  const decisions = new Set(recorded.map(decisionOf));
  const repeats = named.length === recorded.length && named.every((a) => decisions.has(decisionOf(a)));
  return { answered, repeats };
}

const ajv = new Ajv({ strict: false, allErrors: true });

/**
 * Edited arguments are for an approved call of a server tool, and must fit the tool's parameters as the
 * turn will run it (the agent's tools as they are now): otherwise a 400, and nothing is recorded.
 */
export async function checkEditedArguments(
  q: Queryable,
  pending: PendingApproval,
  answers: ApprovalAnswer[],
  context: TurnContext,
): Promise<void> {
  const edits = answers.filter(
    (a): a is ApprovalDecision => a.type === 'approval' && a.arguments !== undefined && a.arguments !== null,
  );
  if (!edits.length) return;
  const request = await getMessage(q, pending.message_id);
  for (const edit of edits) {
    if (!edit.approve) throw invalid(`Tool call ${edit.tool_call_id}: only an approved call takes arguments`);
    const name = request?.tool_calls?.find((call) => call.id === edit.tool_call_id)?.name;
    const tool = context.tools.find((t) => t.name === name && t.mode !== 'client');
    if (!tool)
      throw invalid(`Tool call ${edit.tool_call_id}: ${name} is not a server tool; the client answers it`);
    const stored = (await getToolVersion(q, tool.id, tool.version)) ?? (await getTool(q, tool.id));
    const parameters = (stored?.json_schema as { parameters?: object } | undefined)?.parameters;
    const validate = ajv.compile(parameters ?? { type: 'object' });
    if (!validate(edit.arguments))
      throw invalid(
        `Tool call ${edit.tool_call_id}: the edited arguments do not fit ${name}'s parameters: ${ajv.errorsText(validate.errors, { dataVar: 'arguments' })}`,
      );
  }
}

/**
 * A client's tool return as the model gets it: its text, and its parts when it holds an image (Letta's
 * ImageContent with a base64 source; one by URL is named in a line, as no model here fetches it).
 */
export function clientReturn(
  returned: ClientToolReturn['tool_return'],
  imageMaxBytes = DEFAULT_IMAGE_MAX_BYTES,
): { text: string; parts?: ReturnPart[] } {
  if (typeof returned === 'string') return { text: returned };
  return limitImages(returnOfParts(returned.map(clientPart)), imageMaxBytes);
}

function clientPart(part: { type: string; text?: string; source?: unknown }): ReturnPart {
  const source = part.source as
    { type?: string; data?: unknown; media_type?: unknown; url?: unknown } | undefined;
  if (part.type !== 'image' || !source) return { type: 'text', text: part.text ?? '' };
  if (source.type === 'base64' && typeof source.data === 'string')
    return imagePart(String(source.media_type ?? 'image/png'), source.data);
  return {
    type: 'text',
    text: `[image ${typeof source.url === 'string' ? source.url : source.type}, not shown]`,
  };
}
