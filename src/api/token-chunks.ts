/**
 * What a `stream_tokens` stream sends of a run's replies: their pieces as the provider streams them
 * (token notices, db/token-deltas.ts), then, as each reply is stored, only what the pieces sent missed.
 * A client that joins the chunks of one message id gets the stored message, whether every notice reached
 * this process or none did.
 */
import type { LettaMessage, ToolCallChunk } from './schemas/responses';
import type { TokenDelta, TokenNotice } from '../db/token-deltas';
import { otidFor } from './letta-shapes';
import { lettaDate } from '../time';

export type StreamChunk = LettaMessage | ToolCallChunk;

/** A reply's parts in the order it stores them (their otid's index): running calls share one part. */
type PartKind = 'reasoning' | 'text' | 'calls';

const partKind = (delta: TokenDelta): PartKind | 'approval' =>
  delta.part === 'tool_call' ? (delta.approval ? 'approval' : 'calls') : delta.part;

const pieceKey = (messageId: string, delta: TokenDelta) =>
  `${messageId} ${delta.part === 'tool_call' ? delta.tool_call_id : delta.part}`;

/** What is left of `full` once `sent` went; undefined when nothing was sent. */
function remainder(full: string, sent: string | undefined): string | undefined {
  if (sent === undefined) return undefined;
  // The stored reply is the streamed one joined: anything else would be a provider's oddity.
  return full.startsWith(sent) ? full.slice(sent.length) : full;
}

export class TokenChunks {
  /** Text sent so far, by message and piece (reasoning, text, or a tool call's id). */
  private readonly sent = new Map<string, string>();
  /** Each streamed message's parts, in the order they began. */
  private readonly parts = new Map<string, PartKind[]>();
  /** Replies whose stored form went out: a notice of theirs that comes late is dropped. */
  private readonly stored = new Set<string>();

  ofNotice(notice: TokenNotice): StreamChunk[] {
    const { message_id: id } = notice;
    if (this.stored.has(id)) return [];
    return notice.deltas.map((delta) => {
      const key = pieceKey(id, delta);
      this.sent.set(
        key,
        (this.sent.get(key) ?? '') + (delta.part === 'tool_call' ? delta.arguments : delta.text),
      );
      const common = {
        id,
        date: lettaDate(new Date()),
        name: null,
        otid: this.otid(id, partKind(delta)),
        sender_id: null,
        step_id: notice.step_id,
        is_err: null,
        seq_id: null,
        run_id: notice.run_id,
      };
      if (delta.part === 'reasoning')
        return {
          ...common,
          message_type: 'reasoning_message',
          reasoning: delta.text,
          source: 'reasoner_model',
          signature: null,
        };
      if (delta.part === 'text') return { ...common, message_type: 'assistant_message', content: delta.text };
      const call = { name: delta.name ?? null, arguments: delta.arguments, tool_call_id: delta.tool_call_id };
      return {
        ...common,
        message_type: delta.approval ? 'approval_request_message' : 'tool_call_message',
        tool_call: call,
        tool_calls: call,
      };
    });
  }

  /** A stored message part → itself when none of it streamed, else the rest of each streamed piece. */
  ofStored(message: LettaMessage): StreamChunk[] {
    const { id } = message;
    this.stored.add(id);
    const sentOf = (piece: string) => this.sent.get(`${id} ${piece}`);
    switch (message.message_type) {
      case 'reasoning_message': {
        const rest = remainder(message.reasoning, sentOf('reasoning'));
        return [rest === undefined ? message : { ...message, reasoning: rest }];
      }
      case 'assistant_message': {
        const rest = remainder(message.content, sentOf('text'));
        return [rest === undefined ? message : { ...message, content: rest }];
      }
      case 'tool_call_message':
      case 'approval_request_message': {
        if (!message.tool_calls.some((call) => sentOf(call.tool_call_id) !== undefined)) return [message];
        return message.tool_calls.map((call) => {
          const sent = sentOf(call.tool_call_id);
          const delta = {
            name: sent === undefined ? call.name : null,
            arguments: remainder(call.arguments, sent) ?? call.arguments,
            tool_call_id: call.tool_call_id,
          };
          return { ...message, tool_call: delta, tool_calls: delta };
        });
      }
      default:
        return [message];
    }
  }

  /** Letta's otid of a part: the message id for an approval request, else by the part's place. */
  private otid(messageId: string, kind: PartKind | 'approval'): string {
    if (kind === 'approval') return messageId;
    const parts = this.parts.get(messageId) ?? [];
    if (!parts.includes(kind)) parts.push(kind);
    this.parts.set(messageId, parts);
    return otidFor(messageId, parts.indexOf(kind));
  }
}
