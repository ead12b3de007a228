/**
 * The API's ear on the database's run events (migration 0007): a follower of a run wakes as soon as
 * the run's messages or its stop are stored, instead of polling on a short interval. While the
 * subscription is down (a lost connection, or a database proxy without LISTEN), followers poll at
 * the short interval as before, and the subscription is made again with backoff.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Database, Subscription } from '../db';
import type { Logger } from '../logger';
import { errorText } from '../temporal/connection';
import {
  processTokenNotices,
  RUN_EVENTS_CHANNEL,
  TokenNoticeSchema,
  type LocalTokenNotices,
  type TokenNotice,
} from '../db/token-deltas';

const RESUBSCRIBE_MAX_MS = 30_000;

export interface RunEventIntervals {
  /** How often a follower polls while there is no subscription. */
  pollMs: number;
  /** How often it polls anyway while subscribed: a safety net, should a notification go missing. */
  fallbackMs: number;
}

/** One follower of one run: it counts the run's events, so that none is missed between two looks. */
export interface RunFollower {
  /** The events heard so far: pass it to `next` after looking at the run. */
  seen(): number;
  /** Settles once an event comes after `seen` (at once if one already has), or after the poll interval. */
  next(seen: number): Promise<void>;
  stop(): void;
}

export interface FollowerOptions {
  /** Gets the run's replies' pieces while they stream. */
  onTokens?: (notice: TokenNotice) => void;
  /** Counts the run's stop alone, not each message stored (a response without a stream to feed). */
  stopsOnly?: boolean;
}

interface FollowerState extends FollowerOptions {
  events: number;
  wake?: () => void;
}

/** The prefix of a stop's second announcement (migration 0021); the first is the bare run id. */
const STOP_PREFIX = 'stop:';

export class RunEvents {
  private readonly followers = new Map<string, Set<FollowerState>>();
  private subscription?: Subscription;
  private readonly stopping = new AbortController();
  private loop?: Promise<void>;
  private unsubscribeLocal?: () => void;
  /** This process's `origin` field as a notice's JSON carries it. */
  private readonly ownOrigin: string;

  /** `local`: the token notices of this process's model calls, heard at once rather than through the database. */
  constructor(
    private readonly db: Database,
    private readonly intervals: RunEventIntervals,
    private readonly log: Logger,
    private readonly local: LocalTokenNotices = processTokenNotices,
  ) {
    this.ownOrigin = `"origin":${JSON.stringify(local.origin)}`;
  }

  start(): void {
    this.unsubscribeLocal = this.local.subscribe((notice) => this.handTokens(notice));
    this.loop = this.keepSubscribed();
  }

  async close(): Promise<void> {
    this.unsubscribeLocal?.();
    this.stopping.abort();
    await this.subscription?.close().catch(() => {});
    await this.loop;
  }

  /** Follows a run's events. */
  follow(runId: string, options: FollowerOptions = {}): RunFollower {
    const state: FollowerState = { events: 0, ...options };
    const all = this.followers.get(runId) ?? new Set();
    all.add(state);
    this.followers.set(runId, all);
    return {
      seen: () => state.events,
      next: (seen) => {
        if (state.events > seen) return Promise.resolve();
        const ms = this.subscription ? this.intervals.fallbackMs : this.intervals.pollMs;
        return new Promise<void>((resolve) => {
          const timer = setTimeout(() => state.wake?.(), ms);
          state.wake = () => {
            clearTimeout(timer);
            state.wake = undefined;
            resolve();
          };
        });
      },
      stop: () => {
        state.wake?.();
        all.delete(state);
        if (all.size === 0) this.followers.delete(runId);
      },
    };
  }

  /**
   * A notification: a run's id (migration 0007's triggers: a message stored, or the run's stop), the
   * stop again under STOP_PREFIX (migration 0021), or a token notice (db/token-deltas.ts).
   */
  private heard(payload: string): void {
    if (payload.startsWith('{')) return this.heardTokens(payload);
    const stop = payload.startsWith(STOP_PREFIX);
    const runId = stop ? payload.slice(STOP_PREFIX.length) : payload;
    for (const state of this.followers.get(runId) ?? []) {
      if (Boolean(state.stopsOnly) !== stop) continue;
      state.events++;
      state.wake?.();
    }
  }

  private heardTokens(payload: string): void {
    // This process's own notices came from `local`, each as it was published. The key and its value
    // appear unescaped only as the notice's own field: quotes inside a string are escaped.
    if (payload.includes(this.ownOrigin)) return;
    let notice: TokenNotice;
    try {
      notice = TokenNoticeSchema.parse(JSON.parse(payload));
    } catch (error) {
      return void this.log.warn({ error: errorText(error) }, 'ignored a malformed token notice');
    }
    this.handTokens(notice);
  }

  private handTokens(notice: TokenNotice): void {
    for (const state of this.followers.get(notice.run_id) ?? []) state.onTokens?.(notice);
  }

  /** Wakes every follower: after a lost subscription, events may have gone unheard. */
  private wakeAll(): void {
    for (const all of this.followers.values()) for (const state of all) state.wake?.();
  }

  private async keepSubscribed(): Promise<void> {
    const { signal } = this.stopping;
    for (let failures = 0; !signal.aborted;) {
      try {
        const subscription = await this.db.listen(RUN_EVENTS_CHANNEL, (payload) => this.heard(payload));
        if (signal.aborted) return void (await subscription.close());
        this.subscription = subscription;
        failures = 0;
        await subscription.ended;
        this.subscription = undefined;
        if (signal.aborted) return;
        this.log.warn('lost the subscription to run events: polling until it is back');
      } catch (error) {
        failures++;
        this.log.warn({ error: errorText(error) }, 'could not subscribe to run events: polling meanwhile');
      }
      this.wakeAll();
      const delay = Math.min(this.intervals.pollMs * 2 ** failures, RESUBSCRIBE_MAX_MS);
      await sleep(delay, undefined, { signal }).catch(() => {});
    }
  }
}
