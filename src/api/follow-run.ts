/**
 * Follows a run while its workflow works: hands on each message as the workflow stores it, and ends
 * when the run stops. A run stops when its turn ends or pauses for approval (the workflow then waits
 * on, under a later run), so it is the run's row that tells, not the workflow's result. It looks
 * again whenever the database announces a change of the run (run-events.ts).
 */
import type { ApiContext } from './context';
import { runMessagesAfter } from '../db/messages';
import { ABANDONED_RUN_ERROR, getRun } from '../db/runs';
import type { MessageRow, RunRow } from '../db/rows';
import type { TurnLiveness } from '../agent/turns';
import type { AgentTurnError } from '../../contracts/payloads';
import type { TokenNotice } from '../db/token-deltas';

/** How often the workflows are asked whether they still run (a terminated one never stops its run). */
const WORKFLOW_CHECK_MS = 1_000;

export interface RunStop {
  run: RunRow;
  stopReason: string;
  /** Why the run failed, in Letta's error terms. */
  error?: AgentTurnError;
}

const isStopped = (run: RunRow | undefined) => Boolean(run?.completed_at);

function stopOf(run: RunRow): RunStop {
  const error = run.metadata?.error as { error_type: string; message: string } | undefined;
  return {
    run,
    stopReason: run.stop_reason ?? 'error',
    ...(error ? { error: { type: error.error_type, message: error.message } } : {}),
  };
}

/**
 * A failed model call as Letta's server answers a request that does not stream (its app.py exception
 * handlers): the provider's failure in HTTP terms, with its message as the detail.
 */
const LLM_FAILURES: Record<string, { status: number; message: string }> = {
  llm_rate_limit: {
    status: 429,
    message: 'Rate limit exceeded for LLM model provider. Please wait before making another request.',
  },
  llm_insufficient_credits: {
    status: 402,
    message: 'Insufficient credits for LLM request. Please check your account.',
  },
  llm_authentication: { status: 401, message: 'Authentication failed with the LLM model provider.' },
  llm_bad_request: { status: 400, message: 'The request to the LLM model provider was invalid.' },
  llm_timeout: { status: 504, message: 'The LLM request timed out. Please try again.' },
  llm_error: { status: 500, message: 'An error occurred with the LLM request.' },
};

/** Letta's HTTP answer to a model failure of Letta's `errorType`, with the provider's words as detail. */
export function llmFailureAnswer(errorType: string, detail: string): { status: number; body: unknown } {
  const type = errorType in LLM_FAILURES ? errorType : 'llm_error';
  const { status, message } = LLM_FAILURES[type];
  return { status, body: { error: { type, message, detail } } };
}

/** Letta's HTTP answer to a run that stopped on a model failure, if `stop` is one. */
export function modelFailureAnswer(stop: RunStop): { status: number; body: unknown } | undefined {
  if (stop.stopReason !== 'llm_api_error' || !stop.error) return undefined;
  return llmFailureAnswer(stop.error.type, stop.error.message);
}

export interface FollowOptions {
  /** Gets each message of the run as it is stored, in order (and is waited for). */
  onMessages?: (rows: MessageRow[]) => void | Promise<void>;
  /** Messages stored up to this seq are not handed on: the caller has them. */
  afterSeq?: number;
  /** Gets the pieces of the run's replies while the provider streams them (`stream_tokens`). */
  onTokens?: (notice: TokenNotice) => void;
  /** Whether the caller went away: following ends. */
  abandoned?: () => boolean;
}

export async function followRun(
  ctx: ApiContext,
  runId: string,
  alive: TurnLiveness,
  { onMessages, onTokens, afterSeq = 0, abandoned = () => false }: FollowOptions,
): Promise<RunStop | undefined> {
  // Without a stream to feed, only the run's stop matters: it wakes for the stop alone, not at each
  // message, and the run's messages are read once, after it.
  const follower = ctx.runEvents.follow(runId, { onTokens, stopsOnly: !onMessages });
  try {
    let lastSeq = afterSeq;
    const flush = async () => {
      if (!onMessages) return;
      const rows = await runMessagesAfter(ctx.db, runId, lastSeq);
      if (rows.length) {
        lastSeq = rows[rows.length - 1].seq;
        await onMessages(rows);
      }
    };
    for (let checked = Date.now(); !abandoned();) {
      const seen = follower.seen();
      // The run row first: once it says stopped, every message of the run is already stored.
      const run = await getRun(ctx.db, runId);
      await flush();
      if (run && isStopped(run)) return stopOf(run);
      if (Date.now() - checked >= WORKFLOW_CHECK_MS) {
        checked = Date.now();
        if (!(await alive())) {
          const last = await getRun(ctx.db, runId);
          await flush();
          if (last && isStopped(last)) return stopOf(last);
          const error = { ...ABANDONED_RUN_ERROR };
          return { run: last ?? run!, stopReason: 'error', error };
        }
      }
      await follower.next(seen);
    }
    return undefined;
  } finally {
    follower.stop();
  }
}
