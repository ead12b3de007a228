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

  it('when a message of the run is stored, and when the run stops', async () => {
    const runId = await newRun(db);
    const follower = events.follow(runId);
    await new Promise((resolve) => setTimeout(resolve, 200)); // subscribed by now
    let seen = follower.seen();
    const message = follower.next(seen);
    await insertMessage(db, {
      id: newId('message'),
      agent_id: (await db.query<{ agent_id: string }>('SELECT agent_id FROM runs WHERE id = $1', [runId]))[0]
        .agent_id,
      run_id: runId,
      role: 'user',
      content: [{ type: 'text', text: 'hi' }],
    });
    expect(await within(message, 5_000)).toBe('woke');

    seen = follower.seen();
    const stop = follower.next(seen);
    await finishRun(db, runId, { status: 'completed', stopReason: 'end_turn', usage: {} });
    expect(await within(stop, 5_000)).toBe('woke');
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
