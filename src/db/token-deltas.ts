/**
 * Token deltas: the pieces of a model reply while the provider streams it, on their way from the model
 * activity to the API streams that follow its run (`stream_tokens`). An API in the model call's own
 * process (`npm start`'s) gets each delta at once, in memory; an API in another process gets them as
 * notifications on the run events channel (migration 0007), which name the process they came from so
 * that its own API drops what it already has. They are never stored: the reply is, whole, once
 * complete, and that is what a stream that missed a piece sends.
 */
import { randomUUID } from 'node:crypto';
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
  /** The process that published it (`LocalTokenNotices.origin`): its own API has it already. */
  origin: z.string().optional(),
  deltas: z.array(TokenDeltaSchema),
});
export type TokenNotice = z.infer<typeof TokenNoticeSchema>;

/**
 * A process's token notices, handed to the followers of its own API as they are published. Every
 * notice a publisher sends through PostgreSQL carries its `origin` too, and only a notice of another
 * origin is handed on from there: a follower in this process gets each notice once, from here.
 */
export class LocalTokenNotices {
  readonly origin = randomUUID();
  private readonly listeners = new Set<(notice: TokenNotice) => void>();

  /** Hands each notice published in this process to `listener`, until the returned function is called. */
  subscribe(listener: (notice: TokenNotice) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Hands `notice` to every listener; one that fails is reported to `onError` and fails nothing else. */
  publish(notice: TokenNotice, onError: (error: unknown) => void): void {
    for (const listener of this.listeners) {
      try {
        listener(notice);
      } catch (error) {
        onError(error);
      }
    }
  }
}

/** The notices of this process: its model calls publish them, its API follows them. */
export const processTokenNotices = new LocalTokenNotices();

/** A notification's payload must stay under PostgreSQL's 8000 bytes. */
const MAX_NOTICE_BYTES = 7000;
/** A delta's text is cut into pieces this long, so that one piece fits a notice even JSON-escaped. */
const MAX_PIECE_CHARS = 1000;

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

/** The notices of one `send`: it settles once the last has gone, failed if a statement of theirs failed. */
interface SendGroup {
  left: number;
  error?: unknown;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * A process's notices on their way through PostgreSQL: those published while a statement is in flight
 * go in the next, every run's together, in the order they came. A payload goes once per statement,
 * since PostgreSQL folds identical notifications of one transaction into one: a repeated one waits for
 * the next statement.
 */
class NoticeSender {
  private queue: { payload: string; group: SendGroup }[] = [];
  private sending = false;

  constructor(private readonly db: Queryable) {}

  /** Settles once `payloads` have gone, or fails with the error of a statement that carried them. */
  send(payloads: string[]): Promise<void> {
    if (!payloads.length) return Promise.resolve();
    const sent = new Promise<void>((resolve, reject) => {
      const group: SendGroup = { left: payloads.length, resolve, reject };
      this.queue.push(...payloads.map((payload) => ({ payload, group })));
    });
    if (!this.sending) {
      this.sending = true;
      void this.drain();
    }
    return sent;
  }

  private async drain(): Promise<void> {
    while (this.queue.length) {
      const batch = this.nextStatement();
      let error: unknown;
      try {
        await this.db.query('SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload', [
          RUN_EVENTS_CHANNEL,
          batch.map((notice) => notice.payload),
        ]);
      } catch (failure) {
        error = failure ?? new Error('a notification failed');
      }
      for (const { group } of batch) {
        group.error ??= error;
        if (--group.left === 0) {
          if (group.error) group.reject(group.error);
          else group.resolve();
        }
      }
    }
    // In the same synchronous stretch as the loop's last look: a notice queued after it starts a drain.
    this.sending = false;
  }

  /** The queue's head up to its first repeated payload. */
  private nextStatement() {
    const payloads = new Set<string>();
    let end = 0;
    while (end < this.queue.length && !payloads.has(this.queue[end].payload))
      payloads.add(this.queue[end++].payload);
    return this.queue.splice(0, end);
  }
}

/** One sender per database handle: the process's model calls share its statements. */
const senders = new WeakMap<Queryable, NoticeSender>();

function noticeSender(db: Queryable): NoticeSender {
  let sender = senders.get(db);
  if (!sender) senders.set(db, (sender = new NoticeSender(db)));
  return sender;
}

export interface TokenPublisher {
  push(delta: TokenDelta): void;
  /** Sends what is gathered and settles once every notice has gone (or failed: they are best effort). */
  close(): Promise<void>;
}

/**
 * Publishes one reply's deltas in order: to this process's API (`local`) each at once, and through
 * PostgreSQL each as soon as the reply's notice before it has gone: those that come meanwhile go
 * together in the next (consecutive pieces of one part joined), so a model faster than the database is
 * not one notification per token. A failed notice is only logged: the stored reply makes up for it.
 */
export function tokenPublisher(
  db: Queryable,
  fields: Omit<TokenNotice, 'deltas' | 'origin'>,
  onError: (error: unknown) => void,
  local = processTokenNotices,
): TokenPublisher {
  const head = { ...fields, origin: local.origin };
  const sender = noticeSender(db);
  let gathered: TokenDelta[] = [];
  /** Whether a drain runs: it takes every delta gathered before its loop ends. */
  let sending = false;
  let drained = Promise.resolve();
  /** Sends what is gathered, then what gathered meanwhile, until nothing is left. */
  const drain = async () => {
    while (gathered.length) {
      const batch = gathered;
      gathered = [];
      try {
        await sender.send(notices(head, batch));
      } catch (error) {
        onError(error);
      }
    }
    // In the same synchronous stretch as the loop's last look: a delta pushed after it starts a drain.
    sending = false;
  };
  const send = () => {
    if (!sending && gathered.length) {
      sending = true;
      drained = drain();
    }
    return drained;
  };
  return {
    push(delta) {
      local.publish({ ...head, deltas: [delta] }, onError);
      const last = gathered[gathered.length - 1];
      if (last && samePart(last, delta) && !(delta.part === 'tool_call' && delta.name))
        gathered[gathered.length - 1] = withText(last, textOf(last) + textOf(delta));
      else gathered.push(delta);
      void send();
    },
    close: send,
  };
}
