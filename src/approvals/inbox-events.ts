/**
 * Wakes the approval inbox's streams when a pause is recorded or answered (migration 0026 announces
 * each on `letta_approval_events`). A wake is a hint: a stream reads the changes since its last read
 * (ApprovalChangeFeed) at every wake and at least every `fallbackMs`, so a lost notification, or a
 * database without LISTEN, only delays it.
 */
import type { Database, Queryable, Subscription } from '../db';
import { approvalChangesSince } from '../db/approval-requests';

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

/** A change the approvals stream announces: a pause begun, or ended (answered, expired, cancelled, gone). */
export interface ApprovalEvent {
  approval_request_id: string;
  change: 'requested' | 'answered';
}

/**
 * The changes to the pauses of some agents (none: all), read since the last read: each read asks for
 * the requests written by transactions from the previous read's horizon on (approvalChangesSince), so
 * a transaction that commits after a read, whatever its id, is read by the next one. The versions read
 * above the horizon may be read again; they are remembered until the horizon passes them, and each is
 * announced once.
 */
export class ApprovalChangeFeed {
  private horizon?: string;
  private readonly announced = new Set<string>();

  constructor(
    private readonly db: Queryable,
    private readonly agentIds?: string[],
  ) {}

  /** Takes note of the changes so far, to announce only those after it. */
  async start(): Promise<void> {
    await this.read();
  }

  /** The changes since the last read, each once. */
  async read(): Promise<ApprovalEvent[]> {
    const { horizon, changes } = await approvalChangesSince(this.db, this.horizon, this.agentIds);
    const events: ApprovalEvent[] = [];
    for (const change of changes) {
      const key = `${change.request_message_id} ${change.version}`;
      if (this.announced.has(key)) continue;
      this.announced.add(key);
      events.push({
        approval_request_id: change.request_message_id,
        change: change.waits ? 'requested' : 'answered',
      });
    }
    for (const key of this.announced)
      if (BigInt(key.split(' ')[1]) < BigInt(horizon)) this.announced.delete(key);
    this.horizon = horizon;
    return events;
  }
}
