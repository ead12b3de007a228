/**
 * What a tool call reads, read before the call starts. The calls of one reply run one after the
 * other; when the next runs through the same local activity (so in this process), the workflow names
 * it in this call's input, and its read starts while this call runs (activities/tool-call.ts): with
 * this call's tool when nothing it reads depends on this call, else as soon as this call is recorded.
 * Its round trip to the database then overlaps the tool's wait, or the local activity's completion
 * and the next one's start (bench/where-the-time-goes.md), instead of adding to them.
 *
 * The read says whether the call was already recorded: the check that keeps a tool from running
 * twice. A read taken early could miss a record made after it by another run of the same call. Here,
 * the workflow waits for each call before it starts the next; another worker runs the step's calls
 * only once the step's workflow task here has timed out, and this worker renews a task that runs local
 * activities at 80% of its timeout (STEP_TASK_TIMEOUT_MS, at least a second): this process would have
 * to stop for 200 ms at least. So the next call takes the read only within MAX_AGE_MS of its start,
 * once, and reads again otherwise: a read that young has missed no such record, unless this process
 * stopped in between, which its age then shows. What is left is the race there always was, two runs
 * of one call checking at once, its window at most MAX_AGE_MS wider.
 */
import type { ToolCallKey, ToolCallRead } from '../src/db/tool-calls';

/** Half the least time between a task's renewal and its timeout (above); a call's gap is ~2 ms. */
export const MAX_AGE_MS = 100;

interface Entry {
  key: ToolCallKey;
  startedAt: number;
  read: Promise<ToolCallRead>;
}

const sameKey = (a: ToolCallKey, b: ToolCallKey) =>
  a.toolCallId === b.toolCallId &&
  a.agentId === b.agentId &&
  a.messageId === b.messageId &&
  a.toolId === b.toolId &&
  a.toolVersion === b.toolVersion;

/** Reads started for calls to come, by tool call id; one per activity (one executor, one kind of read). */
export class ReadsAhead {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly now: () => number = performance.now.bind(performance)) {}

  /** Starts `read` for the call `key`; a read that fails is as if none had started. */
  start(key: ToolCallKey, read: () => Promise<ToolCallRead>): void {
    this.dropStale();
    const entry: Entry = { key, startedAt: this.now(), read: read() };
    entry.read.catch(() => this.entries.get(key.toolCallId) === entry && this.entries.delete(key.toolCallId));
    this.entries.set(key.toolCallId, entry);
  }

  /** The read started for this call, if one is young enough; it is taken once. */
  async take(key: ToolCallKey): Promise<ToolCallRead | undefined> {
    const entry = this.entries.get(key.toolCallId);
    if (!entry) return undefined;
    this.entries.delete(key.toolCallId);
    if (!sameKey(entry.key, key)) return undefined;
    const read = await entry.read.catch(() => undefined);
    return this.now() - entry.startedAt <= MAX_AGE_MS ? read : undefined;
  }

  /** Entries no call took (it was refused, or ran elsewhere): oldest first, as the map keeps them. */
  private dropStale(): void {
    for (const [id, entry] of this.entries) {
      if (this.now() - entry.startedAt <= MAX_AGE_MS) return;
      this.entries.delete(id);
    }
  }
}
