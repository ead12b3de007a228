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

/** The channel migration 0007's triggers notify on. */
const RUN_EVENTS_CHANNEL = 'letta_run_events';

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

export class RunEvents {
  private readonly followers = new Map<string, Set<{ events: number; wake?: () => void }>>();
  private subscription?: Subscription;
  private readonly stopping = new AbortController();
  private loop?: Promise<void>;

  constructor(
    private readonly db: Database,
    private readonly intervals: RunEventIntervals,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.loop = this.keepSubscribed();
  }

  async close(): Promise<void> {
    this.stopping.abort();
    await this.subscription?.close().catch(() => {});
    await this.loop;
  }

  follow(runId: string): RunFollower {
    const state: { events: number; wake?: () => void } = { events: 0 };
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

  private heard(runId: string): void {
    for (const state of this.followers.get(runId) ?? []) {
      state.events++;
      state.wake?.();
    }
  }

  /** Wakes every follower: after a lost subscription, events may have gone unheard. */
  private wakeAll(): void {
    for (const all of this.followers.values()) for (const state of all) state.wake?.();
  }

  private async keepSubscribed(): Promise<void> {
    const { signal } = this.stopping;
    for (let failures = 0; !signal.aborted;) {
      try {
        const subscription = await this.db.listen(RUN_EVENTS_CHANNEL, (runId) => this.heard(runId));
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
