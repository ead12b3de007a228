/**
 * What an AG-UI run asks of the thread's turn. A frontend sends its whole history with every run; the
 * server's conversation is the history, so only what it lacks is new: the user messages at the end
 * that it has not stored (their ids are kept as otids), the results of the frontend tools the turn
 * waits for, and the resume entries that answer its interrupts.
 */
import { contentToText, type Message, type ResumeEntry, type RunAgentInput } from '@ag-ui/core';
import type { ApprovalAnswer, FollowUp } from '../approvals/answering';
import type { ApprovalCallRow } from '../db/approval-requests';
import type { ElicitationResponse } from '../approvals/elicitation-answers';
import { HttpError } from './errors';

/** Why a run asks for approval, as its interrupt's `reason` says. */
export const INTERRUPT_REASONS = { approval: 'tool_approval', elicitation: 'mcp_elicitation' } as const;

/** The user messages at the end of the input, after its last message of another role. */
export function trailingUserMessages(messages: Message[]): Extract<Message, { role: 'user' }>[] {
  const tail: Extract<Message, { role: 'user' }>[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message.role !== 'user') break;
    tail.unshift(message);
  }
  return tail;
}

export const followUpOf = (message: Extract<Message, { role: 'user' }>): FollowUp => ({
  role: 'user',
  text: typeof message.content === 'string' ? message.content : contentToText(message.content),
  name: message.name ?? null,
  otid: message.id,
});

/** A resume entry's payload for a tool call's approval: `{ approve, reason, arguments }`. */
interface DecisionPayload {
  approve?: boolean;
  reason?: string;
  arguments?: Record<string, unknown>;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function decisionOf(
  entry: ResumeEntry,
  call: Pick<ApprovalCallRow, 'tool_call_id' | 'kind'>,
): ApprovalAnswer {
  const payload: unknown = entry.payload;
  if (entry.status === 'cancelled') {
    const reason = isObject(payload) && typeof payload.reason === 'string' ? payload.reason : null;
    return call.kind === 'elicitation'
      ? {
          type: 'approval',
          tool_call_id: call.tool_call_id,
          approve: true,
          elicitation_response: { action: 'cancel' },
        }
      : { type: 'approval', tool_call_id: call.tool_call_id, approve: false, reason };
  }
  if (payload !== undefined && !isObject(payload))
    throw new HttpError(422, `The resume payload of interrupt ${entry.interruptId} must be an object`);
  if (call.kind === 'elicitation') {
    const response: ElicitationResponse =
      payload && ('action' in payload || 'content' in payload)
        ? (payload as ElicitationResponse)
        : { action: 'accept', content: payload ?? {} };
    return {
      type: 'approval',
      tool_call_id: call.tool_call_id,
      approve: true,
      elicitation_response: response,
    };
  }
  const decision = (payload ?? {}) as DecisionPayload;
  return {
    type: 'approval',
    tool_call_id: call.tool_call_id,
    approve: decision.approve !== false,
    reason: typeof decision.reason === 'string' ? decision.reason : null,
    ...(isObject(decision.arguments) ? { arguments: decision.arguments } : {}),
  };
}

/** A frontend tool's result message as the turn's client tool return. */
const clientReturnOf = (message: Extract<Message, { role: 'tool' }>): ApprovalAnswer => ({
  type: 'tool',
  tool_call_id: message.toolCallId,
  tool_return: message.error ? `${message.content}\n${message.error}`.trim() : message.content,
  status: message.error ? 'error' : 'success',
});

/**
 * The answers `input` gives the calls the turn waits for: empty when it answers none of them, all of
 * them or a 422 naming what is missing; a resume entry for an interrupt that does not wait is a 409.
 */
export function answersFor(
  input: Pick<RunAgentInput, 'messages' | 'resume'>,
  waiting: Pick<ApprovalCallRow, 'tool_call_id' | 'kind'>[],
): ApprovalAnswer[] {
  const results = new Map(
    input.messages.flatMap((m) => (m.role === 'tool' ? [[m.toolCallId, m] as const] : [])),
  );
  const resumes = new Map((input.resume ?? []).map((entry) => [entry.interruptId, entry]));
  const stale = [...resumes.keys()].filter((id) => !waiting.some((call) => call.tool_call_id === id));
  if (stale.length)
    throw new HttpError(
      409,
      `Interrupt ${stale.join(', ')} is not waiting for an answer: it was answered, expired or cancelled`,
    );
  const answers = waiting.flatMap((call): ApprovalAnswer[] => {
    if (call.kind === 'client_tool') {
      const result = results.get(call.tool_call_id);
      return result ? [clientReturnOf(result)] : [];
    }
    const entry = resumes.get(call.tool_call_id);
    return entry ? [decisionOf(entry, call)] : [];
  });
  if (answers.length === 0 || answers.length === waiting.length) return answers;
  const missing = waiting.filter((call) => !answers.some((a) => a.tool_call_id === call.tool_call_id));
  throw new HttpError(
    422,
    `The run answers ${answers.length} of the ${waiting.length} calls the thread waits for; also answer ` +
      missing
        .map((call) =>
          call.kind === 'client_tool'
            ? `frontend tool call ${call.tool_call_id} (a tool message)`
            : `interrupt ${call.tool_call_id} (a resume entry)`,
        )
        .join(', '),
  );
}

/** Resume entries with nothing waiting: answered as approvals, for the turn to say why they cannot be. */
export const lateResumes = (input: Pick<RunAgentInput, 'resume'>): ApprovalAnswer[] =>
  (input.resume ?? []).map((entry) =>
    decisionOf(entry, { tool_call_id: entry.interruptId, kind: 'approval' }),
  );
