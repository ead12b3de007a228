/**
 * Wakes the approval inbox's streams when a pause is recorded or answered (migration 0026 announces
 * each on `letta_approval_events`). A wake is a hint: a stream reads the waiting approvals again at
 * every wake and at least every `fallbackMs`, so a lost notification, or a database without LISTEN,
 * only delays it.
 */
import type { Database, Subscription } from '../db';

const CHANNEL = 'letta_approval_events';

export class ApprovalWakes {
  private readonly waiters = new Set<() => void>();
  private subscription?: Promise<Subscription | undefined>;
  private readonly stopping = new AbortController();
  /** Aborted when the server stops: the streams end, so that the HTTP server can close. */
  readonly stopped = this.stopping.signal;

  constructor(
    private readonly db: Database,
    private readonly fallbackMs: number,
  ) {}

  /** Settles at the next announcement, after `fallbackMs`, or when `signal` aborts. */
  async next(signal: AbortSignal): Promise<void> {
    await this.subscribe();
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, this.fallbackMs);
      this.waiters.add(done);
      signal.addEventListener('abort', done);
      if (this.stopped.aborted) done();
    });
  }

  async close(): Promise<void> {
    this.stopping.abort();
    [...this.waiters].forEach((wake) => wake());
    await (await this.subscription)?.close();
  }

  /** One subscription for every stream, made again by the next stream after it is lost. */
  private subscribe(): Promise<unknown> {
    this.subscription ??= this.db
      .listen(CHANNEL, () => [...this.waiters].forEach((wake) => wake()))
      .then((subscription) => {
        void subscription.ended.then(() => (this.subscription = undefined));
        return subscription;
      })
      .catch(() => (this.subscription = undefined));
    return this.subscription;
  }
}
