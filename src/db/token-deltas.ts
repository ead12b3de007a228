/**
 * Token deltas: the pieces of a model reply while the provider streams it, on their way from the model
 * activity to the API streams that follow its run (`stream_tokens`). They travel as notifications on
 * the run events channel (migration 0007), so they reach an API in another process; they are never
 * stored: the reply is, whole, once complete, and that is what a stream that missed a piece sends.
 */
import { z } from 'zod';
import type { Queryable } from './database';

/** The channel of run events: a run's id when its row or messages change, or a JSON token notice. */
export const RUN_EVENTS_CHANNEL = 'letta_run_events';

export const TokenDeltaSchema = z.discriminatedUnion('part', [
  z.object({ part: z.literal('reasoning'), text: z.string() }),
  z.object({ part: z.literal('text'), text: z.string() }),
  z.object({
    part: z.literal('tool_call'),
    tool_call_id: z.string(),
    /** With the call's first piece only, as Letta streams it. */
    name: z.string().optional(),
    arguments: z.string(),
    /** The call waits for an answer: it streams as Letta's approval request. */
    approval: z.boolean(),
  }),
]);
export type TokenDelta = z.infer<typeof TokenDeltaSchema>;

export const TokenNoticeSchema = z.object({
  run_id: z.string(),
  /** The reply's message and step, as it will be stored. */
  message_id: z.string(),
  step_id: z.string(),
  deltas: z.array(TokenDeltaSchema),
});
export type TokenNotice = z.infer<typeof TokenNoticeSchema>;

/** A notification's payload must stay under PostgreSQL's 8000 bytes. */
const MAX_NOTICE_BYTES = 7000;
/** A delta's text is cut into pieces this long, so that one piece fits a notice even JSON-escaped. */
const MAX_PIECE_CHARS = 1000;
/** Deltas are gathered this long before they go, so a fast model is not one notification per token. */
const FLUSH_MS = 20;

const textOf = (delta: TokenDelta) => (delta.part === 'tool_call' ? delta.arguments : delta.text);
const withText = (delta: TokenDelta, text: string): TokenDelta =>
  delta.part === 'tool_call' ? { ...delta, arguments: text } : { ...delta, text };
const samePart = (a: TokenDelta, b: TokenDelta) =>
  a.part === b.part &&
  (a.part !== 'tool_call' || (b.part === 'tool_call' && a.tool_call_id === b.tool_call_id));

function pieces(delta: TokenDelta): TokenDelta[] {
  const text = textOf(delta);
  if (text.length <= MAX_PIECE_CHARS) return [delta];
  const all: TokenDelta[] = [];
  for (let at = 0; at < text.length; at += MAX_PIECE_CHARS) {
    const piece = withText(delta, text.slice(at, at + MAX_PIECE_CHARS));
    all.push(at === 0 || piece.part !== 'tool_call' ? piece : { ...piece, name: undefined });
  }
  return all;
}

/** Deltas in notices of at most MAX_NOTICE_BYTES each. */
function notices(head: Omit<TokenNotice, 'deltas'>, deltas: TokenDelta[]): string[] {
  const payloads: string[] = [];
  let batch: TokenDelta[] = [];
  const payload = (all: TokenDelta[]) => JSON.stringify({ ...head, deltas: all });
  for (const delta of deltas.flatMap(pieces)) {
    if (batch.length && Buffer.byteLength(payload([...batch, delta])) > MAX_NOTICE_BYTES) {
      payloads.push(payload(batch));
      batch = [];
    }
    batch.push(delta);
  }
  if (batch.length) payloads.push(payload(batch));
  return payloads;
}

export interface TokenPublisher {
  push(delta: TokenDelta): void;
  /** Sends what is gathered and settles once every notice has gone (or failed: they are best effort). */
  close(): Promise<void>;
}

/**
 * Publishes one reply's deltas in order: gathered for FLUSH_MS, consecutive pieces of one part joined,
 * each batch sent after the one before. A failed notice is only logged: the stored reply makes up for it.
 */
export function tokenPublisher(
  db: Queryable,
  head: Omit<TokenNotice, 'deltas'>,
  onError: (error: unknown) => void,
): TokenPublisher {
  let gathered: TokenDelta[] = [];
  let timer: NodeJS.Timeout | undefined;
  let sent = Promise.resolve();
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    const batch = gathered;
    gathered = [];
    if (!batch.length) return;
    sent = sent
      .then(async () => {
        for (const payload of notices(head, batch))
          await db.query('SELECT pg_notify($1, $2)', [RUN_EVENTS_CHANNEL, payload]);
      })
      .catch(onError);
  };
  return {
    push(delta) {
      const last = gathered[gathered.length - 1];
      if (last && samePart(last, delta) && !(delta.part === 'tool_call' && delta.name))
        gathered[gathered.length - 1] = withText(last, textOf(last) + textOf(delta));
      else gathered.push(delta);
      timer ??= setTimeout(flush, FLUSH_MS);
    },
    close() {
      flush();
      return sent;
    },
  };
}
