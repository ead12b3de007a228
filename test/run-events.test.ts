import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RunEvents } from '../src/api/run-events';
import { openDatabase, type Database } from '../src/db';
import { openPglite } from '../src/db/database';
import { migrate } from '../src/db/migrate';
import { insertMessage } from '../src/db/messages';
import { finishRun } from '../src/db/runs';
import { newId } from '../src/ids';
import { silentLogger, testConfig } from './helpers/env';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { agentWithRun } from './helpers/runs';
import { eventually } from './helpers/eventually';
import { LocalTokenNotices, tokenPublisher, type TokenDelta, type TokenNotice } from '../src/db/token-deltas';

/** Long enough that only a notification can wake a follower within a test's patience. */
const NO_POLLING = { pollMs: 60_000, fallbackMs: 60_000 };

const newRun = async (db: Database) => (await agentWithRun(db, { include_base_tools: false })).runId;

const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([
    promise.then(() => 'woke'),
    new Promise<string>((resolve) => setTimeout(() => resolve('still waiting'), ms).unref()),
  ]);

/** What the database announces of a run wakes its followers at once, whichever database it is. */
function wakesFollowers(open: () => Promise<{ db: Database; done: () => Promise<void> }>) {
  let db: Database;
  let done: () => Promise<void>;
  let events: RunEvents;
  beforeAll(async () => {
    ({ db, done } = await open());
    events = new RunEvents(db, NO_POLLING, silentLogger());
    events.start();
  });
  afterAll(async () => {
    await events?.close();
    await done?.();
  });

  /** A user message of the run, stored. */
  const storeMessage = async (runId: string) => {
    const [{ agent_id }] = await db.query<{ agent_id: string }>('SELECT agent_id FROM runs WHERE id = $1', [
      runId,
    ]);
    await insertMessage(db, {
      id: newId('message'),
      agent_id,
      run_id: runId,
      role: 'user',
      content: [{ type: 'text', text: 'hi' }],
    });
  };

  it('when a message of the run is stored, and when the run stops', async () => {
    const runId = await newRun(db);
    const follower = events.follow(runId);
    await new Promise((resolve) => setTimeout(resolve, 200)); // subscribed by now
    let seen = follower.seen();
    const message = follower.next(seen);
    await storeMessage(runId);
    expect(await within(message, 5_000)).toBe('woke');

    seen = follower.seen();
    const stop = follower.next(seen);
    await finishRun(db, runId, { status: 'completed', stopReason: 'end_turn', usage: {} });
    expect(await within(stop, 5_000)).toBe('woke');
    follower.stop();
  });

  it('that wait for the stop alone: when the run stops, not when a message of it is stored', async () => {
    const runId = await newRun(db);
    const follower = events.follow(runId, { stopsOnly: true });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const next = follower.next(follower.seen());
    await storeMessage(runId);
    expect(await within(next, 1_000)).toBe('still waiting');
    await finishRun(db, runId, { status: 'completed', stopReason: 'end_turn', usage: {} });
    expect(await within(next, 5_000)).toBe('woke');
    follower.stop();
  });

  it("not for another run's events", async () => {
    const [mine, other] = [await newRun(db), await newRun(db)];
    const follower = events.follow(mine);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const next = follower.next(follower.seen());
    await finishRun(db, other, { status: 'completed', stopReason: 'end_turn', usage: {} });
    expect(await within(next, 1_000)).toBe('still waiting');
    follower.stop();
    expect(await within(next, 1_000)).toBe('woke'); // a stopped follower lets go of its waiter
  });

  const failOnError = (error: unknown) => {
    throw error;
  };
  /** The notices of a model call in another process: they reach this one through the database alone. */
  const elsewhere = () => new LocalTokenNotices();

  it("hands a reply's token deltas from another process to its run's followers, in order, however long they are", async () => {
    const [mine, other] = [await newRun(db), await newRun(db)];
    const notices: TokenNotice[] = [];
    const follower = events.follow(mine, { onTokens: (notice) => notices.push(notice) });
    const overheard: TokenNotice[] = [];
    const bystander = events.follow(other, { onTokens: (notice) => overheard.push(notice) });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const long = 'ü"\n'.repeat(6_000); // escaped in JSON, far past a notification's 8000 bytes
    const publisher = tokenPublisher(
      db,
      { run_id: mine, message_id: 'message-1', step_id: 'step-1' },
      failOnError,
      elsewhere(),
    );
    for (const text of ['Hel', 'lo ', long]) publisher.push({ part: 'text', text });
    publisher.push({
      part: 'tool_call',
      tool_call_id: 'call_1',
      name: 'search',
      arguments: '{"q"',
      approval: false,
    });
    publisher.push({ part: 'tool_call', tool_call_id: 'call_1', arguments: ':1}', approval: false });
    await publisher.close();
    const deltas = await eventually(
      async () => notices.flatMap((n) => n.deltas),
      (all) => all.at(-1)?.part === 'tool_call',
      5_000,
    );
    expect(notices.length).toBeGreaterThan(1);
    expect(deltas.flatMap((d) => (d.part === 'text' ? [d.text] : [])).join('')).toBe(`Hello ${long}`);
    expect(deltas.filter((d) => d.part === 'tool_call')).toEqual([
      { part: 'tool_call', tool_call_id: 'call_1', name: 'search', arguments: '{"q":1}', approval: false },
    ]);
    expect(overheard).toEqual([]);
    follower.stop();
    bystander.stop();
  });

  it('hands on the deltas of replies published at once in another process, each run its own, in order', async () => {
    const runs = await Promise.all(Array.from({ length: 4 }, () => newRun(db)));
    const heard = new Map<string, string>(runs.map((runId) => [runId, '']));
    const followers = runs.map((runId) =>
      events.follow(runId, {
        onTokens: (notice) =>
          heard.set(
            runId,
            heard.get(runId) + notice.deltas.map((d) => (d.part === 'text' ? d.text : '')).join(''),
          ),
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const process = elsewhere();
    const publishers = runs.map((runId) =>
      tokenPublisher(
        db,
        { run_id: runId, message_id: `message-${runId}`, step_id: 'step-1' },
        failOnError,
        process,
      ),
    );
    // The same pieces in every run, and pieces that repeat within one: notices alike but for their run.
    const pieces = Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? 'same ' : `${i} `));
    for (const piece of pieces)
      for (const publisher of publishers) publisher.push({ part: 'text', text: piece });
    const long = 'x'.repeat(20_000); // pieces of one notice each, alike
    for (const publisher of publishers) publisher.push({ part: 'text', text: long });
    await Promise.all(publishers.map((publisher) => publisher.close()));
    const expected = pieces.join('') + long;
    await eventually(
      async () => [...heard.values()],
      (texts) => texts.every((text) => text.length >= expected.length),
      5_000,
    );
    expect([...heard.values()]).toEqual(runs.map(() => expected));
    for (const follower of followers) follower.stop();
  });

  it("hands a reply's token deltas from this process to its run's followers each at once, and once", async () => {
    const runId = await newRun(db);
    const heard: TokenDelta[] = [];
    const follower = events.follow(runId, { onTokens: (notice) => heard.push(...notice.deltas) });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const head = { run_id: runId, message_id: 'message-1', step_id: 'step-1' };
    const publisher = tokenPublisher(db, head, failOnError);
    const pushed: TokenDelta[] = ['Hel', 'lo ', 'there'].map((text) => ({ part: 'text', text }));
    for (const delta of pushed) {
      publisher.push(delta);
      // Handed on within the push: no timer, no round trip through the database.
      expect(heard.at(-1)).toEqual(delta);
    }
    await publisher.close();
    // A notice sent through the database after the publisher's: once it is heard, so were the
    // publisher's own, which this process's followers already had.
    const marker = tokenPublisher(db, head, failOnError, elsewhere());
    marker.push({ part: 'reasoning', text: 'the last' });
    await marker.close();
    await eventually(
      async () => heard.at(-1),
      (last) => last?.part === 'reasoning',
      5_000,
    );
    expect(heard).toEqual([...pushed, { part: 'reasoning', text: 'the last' }]);
    follower.stop();
  });
}

describe('run events on PostgreSQL', () => {
  let schema: TestSchema;
  wakesFollowers(async () => {
    schema = await createTestSchema();
    const db = await openDatabase(testConfig({ DATABASE_URL: schema.url }), silentLogger());
    return { db, done: async () => (await db.close(), await schema.drop()) };
  });
});

describe('run events on the embedded PGlite', () => {
  wakesFollowers(async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'run-events-'));
    const db = await openPglite(path.join(dir, 'pgdata'));
    await migrate(db);
    return { db, done: async () => (await db.close(), fs.rmSync(dir, { recursive: true, force: true })) };
  });
});
