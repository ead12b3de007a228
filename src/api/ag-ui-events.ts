/**
 * A run's messages as AG-UI events: the pieces a `stream_tokens` stream sends (token-chunks.ts) and the
 * stored messages after them become TEXT_MESSAGE_*, REASONING_*, TOOL_CALL_* and STEP_* events. A part
 * opens at its first piece and closes with its stored form, so a client that joins the deltas of one id
 * has the stored message; every part open is closed before the run's last event.
 */
import { EventType, type Event, type Message } from '@ag-ui/core';
import type { StreamChunk } from './token-chunks';
import type { LettaMessage } from './schemas/responses';
import type { MessageRow } from '../db/rows';
import { lettaMessages } from './letta-shapes';

type Emit = (event: Event) => void;

type ToolCallPiece = { name: string | null; arguments: string; tool_call_id: string };

type ToolReturn = Extract<LettaMessage, { message_type: 'tool_return_message' }>['tool_returns'][number];

/** A return's text: its image parts as a note, as the model's Chat Completions view shows them. */
const returnText = (result: ToolReturn): string =>
  typeof result.tool_return === 'string'
    ? result.tool_return
    : result.tool_return.map((part) => (part.type === 'text' ? part.text : '[Image omitted]')).join('\n');

const callsOf = (chunk: { tool_calls: ToolCallPiece | ToolCallPiece[] }): ToolCallPiece[] =>
  Array.isArray(chunk.tool_calls) ? chunk.tool_calls : [chunk.tool_calls];

/** A reasoning part's AG-UI id: its otid, since its reply's id names the reply's text. */
const reasoningId = (chunk: { id: string; otid: string | null }) => chunk.otid ?? `${chunk.id}-reasoning`;

export class AgUiEvents {
  /** Parts open, by key, with the event that closes each. */
  private readonly open = new Map<string, Event[]>();
  /** Parts closed: a late piece of theirs is dropped. */
  private readonly closed = new Set<string>();
  private step: string | undefined;

  /**
   * `answered`: tool calls whose results the frontend has (its own frontend tools' results, which the
   * run's request brought): they are not sent back to it.
   */
  constructor(
    private readonly emit: Emit,
    private readonly answered: ReadonlySet<string> = new Set(),
  ) {}

  /** A piece of a reply as the provider streams it (`final`: its stored form, which closes it). */
  chunk(chunk: StreamChunk, final: boolean): void {
    if (chunk.step_id) this.enterStep(chunk.step_id);
    switch (chunk.message_type) {
      case 'reasoning_message':
        return this.reasoning(chunk, final);
      case 'assistant_message':
        return this.text(chunk.id, chunk.content, final);
      case 'tool_call_message':
      case 'approval_request_message':
        for (const call of callsOf(chunk)) this.toolCall(chunk.id, call, final);
        return;
      case 'tool_return_message':
        for (const result of chunk.tool_returns.filter((r) => !this.answered.has(r.tool_call_id)))
          this.emit({
            type: EventType.TOOL_CALL_RESULT,
            messageId: `${chunk.otid ?? chunk.id}-${result.tool_call_id}`,
            toolCallId: result.tool_call_id,
            content: returnText(result),
            role: 'tool',
          });
        return;
      default:
        return;
    }
  }

  /** A user's message of the run, for a frontend that joins it without it. */
  userMessage(row: MessageRow): void {
    for (const message of agUiMessages(row)) {
      const messageId = message.id;
      this.emit({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'user' });
      if (message.content)
        this.emit({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: String(message.content) });
      this.emit({ type: EventType.TEXT_MESSAGE_END, messageId });
    }
  }

  /** Closes every open part, then the step: a run's last event may follow. */
  finish(): void {
    for (const [key, closing] of this.open) {
      closing.forEach(this.emit);
      this.closed.add(key);
    }
    this.open.clear();
    if (this.step) this.emit({ type: EventType.STEP_FINISHED, stepName: this.step });
    this.step = undefined;
  }

  private enterStep(stepId: string) {
    if (this.step === stepId) return;
    if (this.step) this.emit({ type: EventType.STEP_FINISHED, stepName: this.step });
    this.step = stepId;
    this.emit({ type: EventType.STEP_STARTED, stepName: stepId });
  }

  /** Opens the part of `key` unless it is open or closed; false when it is closed. */
  private opened(key: string, opening: Event[], closing: Event[]): boolean {
    if (this.closed.has(key)) return false;
    if (!this.open.has(key)) {
      opening.forEach(this.emit);
      this.open.set(key, closing);
    }
    return true;
  }

  private close(key: string) {
    this.open.get(key)?.forEach(this.emit);
    this.open.delete(key);
    this.closed.add(key);
  }

  private text(messageId: string, delta: string, final: boolean) {
    const key = `text ${messageId}`;
    const opening: Event[] = [{ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' }];
    if (!this.opened(key, opening, [{ type: EventType.TEXT_MESSAGE_END, messageId }])) return;
    if (delta) this.emit({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta });
    if (final) this.close(key);
  }

  private reasoning(chunk: Extract<StreamChunk, { message_type: 'reasoning_message' }>, final: boolean) {
    const messageId = reasoningId(chunk);
    const key = `reasoning ${messageId}`;
    const opening: Event[] = [
      { type: EventType.REASONING_START, messageId },
      { type: EventType.REASONING_MESSAGE_START, messageId, role: 'reasoning' },
    ];
    const closing: Event[] = [
      { type: EventType.REASONING_MESSAGE_END, messageId },
      { type: EventType.REASONING_END, messageId },
    ];
    if (!this.opened(key, opening, closing)) return;
    if (chunk.reasoning)
      this.emit({ type: EventType.REASONING_MESSAGE_CONTENT, messageId, delta: chunk.reasoning });
    if (final) this.close(key);
  }

  private toolCall(parentMessageId: string, call: ToolCallPiece, final: boolean) {
    const toolCallId = call.tool_call_id;
    const key = `call ${toolCallId}`;
    const opening: Event[] = [
      { type: EventType.TOOL_CALL_START, toolCallId, toolCallName: call.name ?? '', parentMessageId },
    ];
    if (!this.opened(key, opening, [{ type: EventType.TOOL_CALL_END, toolCallId }])) return;
    if (call.arguments) this.emit({ type: EventType.TOOL_CALL_ARGS, toolCallId, delta: call.arguments });
    if (final) this.close(key);
  }
}

/** A stored message as AG-UI's messages (MESSAGES_SNAPSHOT): the frontend's ids for its own messages. */
export function agUiMessages(row: MessageRow): Message[] {
  const parts = lettaMessages(row);
  switch (row.role) {
    case 'user':
      return parts.map((part) => ({
        id: row.otid ?? row.id,
        role: 'user' as const,
        content: (part as Extract<LettaMessage, { message_type: 'user_message' }>).content,
      }));
    case 'assistant':
      return assistantMessages(row, parts);
    case 'tool':
      return parts.flatMap((part) =>
        part.message_type === 'tool_return_message'
          ? part.tool_returns.map((result) => ({
              id: `${part.otid ?? part.id}-${result.tool_call_id}`,
              role: 'tool' as const,
              toolCallId: result.tool_call_id,
              content: returnText(result),
              ...(result.status === 'error' ? { error: 'the tool call failed' } : {}),
            }))
          : [],
      );
    default:
      return [];
  }
}

function assistantMessages(row: MessageRow, parts: LettaMessage[]): Message[] {
  const messages: Message[] = [];
  for (const part of parts)
    if (part.message_type === 'reasoning_message')
      messages.push({ id: reasoningId(part), role: 'reasoning', content: part.reasoning });
  const text = parts.flatMap((part) => (part.message_type === 'assistant_message' ? [part.content] : []));
  const toolCalls = (row.tool_calls ?? []).map((call) => ({
    id: call.id,
    type: 'function' as const,
    function: { name: call.name, arguments: call.arguments },
  }));
  if (text.length || toolCalls.length)
    messages.push({
      id: row.id,
      role: 'assistant',
      ...(text.length ? { content: text.join('') } : {}),
      ...(toolCalls.length ? { toolCalls } : {}),
    });
  return messages;
}
