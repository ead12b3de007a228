/**
 * A server that is stopping (SIGTERM, SIGINT, SIGHUP) drains: its API refuses new turns at once, with
 * a 503 a client or a load balancer retries elsewhere, and its health check says `stopping`, while the
 * runs in flight go on and every other request is answered. A turn a running tool call starts (its
 * call's token, Letta's injected client) belongs to a run in flight, and is taken.
 */
import { HttpError } from './errors';

export class ServerStopping {
  private since?: number;
  private readonly stopped = new AbortController();

  /** `graceMs`: how long the calls running here may take to finish (SHUTDOWN_GRACE_MS). */
  constructor(private readonly graceMs: number) {}

  begin(): void {
    this.since ??= Date.now();
    this.stopped.abort();
  }

  /** Aborts when the stop begins: for what must end before the connections are cut (a stream). */
  get signal(): AbortSignal {
    return this.stopped.signal;
  }

  get stopping(): boolean {
    return this.since !== undefined;
  }

  /** How long is left of the grace the stop began with: requests in flight get that long. */
  graceLeftMs(): number {
    return this.since === undefined ? this.graceMs : Math.max(0, this.since + this.graceMs - Date.now());
  }

  /**
   * The refusal of a new turn while stopping. Retry-After: the rest of the grace, after which this
   * process has handed its calls on (another replica, or this one restarted, takes the turn).
   */
  refuseNewTurns(): void {
    if (!this.stopping) return;
    const seconds = Math.max(1, Math.ceil(this.graceLeftMs() / 1000));
    throw new HttpError(503, 'The server is stopping and takes no new turns: retry shortly', {
      'Retry-After': String(seconds),
    });
  }
}
