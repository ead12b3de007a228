/**
 * A run's messages as the caller gets them: in one answer once the run stopped, or streamed in Letta's
 * SSE framing as the workflow stores them. A stream numbers its messages (`seq_id`, from 1 in each run)
 * the same way every time, because they are read back from the database in order: a client whose
 * connection dropped asks again with `starting_after` and gets the rest, without loss or repeats.
 */
import type { LettaMessage, StopReason } from './schemas/responses';
import type { Response } from 'express';
import { randomUUID } from 'node:crypto';
import type { ApiContext } from './context';
import { lettaMessages, usageShape } from './letta-shapes';
import { followRun } from './follow-run';
import { lettaDate } from '../time';
import type { TurnLiveness } from '../agent/turns';
import type { MessageRow, RunRow } from '../db/rows';
import type { TokenNotice } from '../db/token-deltas';
import { TokenChunks } from './token-chunks';
import { openEventStream } from './event-stream';

/** What a run produced for the caller: the model's and the tools' messages, not the input echoed back. */
const isOutput = (row: MessageRow) => row.role === 'assistant' || row.role === 'tool';

const wanted = (types: string[] | null | undefined) => (message: { message_type: string }) =>
  !types?.length || types.includes(message.message_type);

export function outputMessages(rows: MessageRow[], types?: string[] | null): LettaMessage[] {
  return rows.filter(isOutput).flatMap(lettaMessages).filter(wanted(types));
}

export function stopReasonShape(stopReason: string): StopReason {
  return { message_type: 'stop_reason', stop_reason: stopReason };
}

export interface StreamOptions {
  includePings: boolean;
  types?: string[] | null;
  /** The `seq_id` of the last message the client has: a resumed stream sends those after it. */
  startingAfter?: number;
  /** Send the replies' pieces as the provider streams them (`stream_tokens`). */
  tokens?: boolean;
}

/** Streams a run's messages as the workflow stores them, then its stop, in Letta's SSE framing. */
export async function streamRun(
  ctx: ApiContext,
  res: Response,
  run: RunRow,
  alive: TurnLiveness,
  options: StreamOptions,
): Promise<void> {
  const gone = openEventStream(res);
  const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  const ping = () =>
    send({ id: `ping-${randomUUID()}`, date: lettaDate(new Date()), message_type: 'ping', run_id: run.id });
  if (options.includePings) ping();
  const keepalive = options.includePings ? setInterval(ping, ctx.config.STREAM_KEEPALIVE_MS) : undefined;
  let seqId = 0;
  const startingAfter = options.startingAfter ?? 0;
  const isWanted = wanted(options.types);
  const tokens = options.tokens ? new TokenChunks() : undefined;
  const sendNew = (rows: MessageRow[]) => {
    for (const message of rows.filter(isOutput).flatMap(lettaMessages)) {
      seqId += 1;
      if (seqId <= startingAfter || !isWanted(message)) continue;
      for (const chunk of tokens?.ofStored(message) ?? [message]) send({ ...chunk, seq_id: seqId });
    }
  };
  const sendTokens = (notice: TokenNotice) => tokens!.ofNotice(notice).filter(isWanted).forEach(send);
  try {
    const stop = await followRun(ctx, run.id, alive, {
      onMessages: sendNew,
      onTokens: tokens && sendTokens,
      abandoned: () => gone.aborted,
    });
    if (!stop) return;
    send(stopReasonShape(stop.stopReason));
    if (stop.error) {
      // Letta's error-aware stream: the stop reason, then a named error event the client raises.
      const error = {
        message_type: 'error_message',
        run_id: run.id,
        error_type: stop.error.type,
        message: stop.error.message,
      };
      res.write(`event: error\ndata: ${JSON.stringify(error)}\n\n`);
    } else {
      send(usageShape(stop.run.usage));
    }
    res.write('data: [DONE]\n\n');
  } finally {
    clearInterval(keepalive);
    res.end();
  }
}
