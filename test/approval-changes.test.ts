import { setTimeout as sleep } from 'node:timers/promises';
import { ApprovalChangeFeed, type ApprovalEvent } from '../src/approvals/inbox-events';
import { approvalChangesSince } from '../src/db/approval-requests';
import { useTestDatabase } from './helpers/test-database';
import { explaining, rowsRead } from './helpers/query-plans';

/**
 * What the approvals stream (GET /v1/approvals/stream) learns at a wake, on the database alone: every
 * pause begun or ended since its last read, each once, however many wait, and a transaction that
 * commits after a read, whatever its id, at the next one.
 */
describe('the approval change feed', () => {
  const h = useTestDatabase();
  const WAITING = 20_000;

  /** `count` agents paused on a request each (request g of agent g, requested g seconds in). */
  async function seed(prefix: string, from: number, count: number) {
    await h.db.exec(`
      INSERT INTO agents (id, name, agent_type, system, llm_config, pending_approval)
      SELECT '${prefix}a' || g, 'agent ' || g, 'letta_v1_agent', '', '{}',
        jsonb_build_object('message_id', '${prefix}m' || g)
      FROM generate_series(${from}, ${from + count - 1}) g;
      INSERT INTO approval_requests (request_message_id, agent_id, run_id, workflow_id, requested_at)
      SELECT '${prefix}m' || g, '${prefix}a' || g, 'run', 'workflow',
        '2026-01-01'::timestamptz + make_interval(secs => g)
      FROM generate_series(${from}, ${from + count - 1}) g;
    `);
  }

  /** Answers request g as recordAnswer does: the request's record and its agent's pause, together. */
  const answer = (prefix: string, g: number) => `
    UPDATE approval_requests SET answered_at = now(), outcome = 'answered' WHERE request_message_id = '${prefix}m${g}';
    UPDATE agents SET pending_approval = NULL WHERE id = '${prefix}a${g}';`;

  const sorted = (events: ApprovalEvent[]) =>
    [...events].sort((a, b) => a.approval_request_id.localeCompare(b.approval_request_id));

  beforeAll(async () => {
    await seed('s', 0, WAITING);
    // As autovacuum does for a table this size: the planner knows the versions' range.
    await h.db.exec('ANALYZE approval_requests');
  });

  it('announces the answer to the oldest of many waiting, a new pause, and each once', async () => {
    const feed = new ApprovalChangeFeed(h.db);
    await feed.start();
    expect(await feed.read()).toEqual([]);
    await h.db.exec(answer('s', 0));
    await seed('n', 0, 1);
    expect(sorted(await feed.read())).toEqual([
      { approval_request_id: 'nm0', change: 'requested' },
      { approval_request_id: 'sm0', change: 'answered' },
    ]);
    expect(await feed.read()).toEqual([]);
  });

  /**
   * A horizon past the seeded requests: the horizon is the oldest transaction open on the whole
   * PostgreSQL server, where other test files' transactions may stay open for a while.
   */
  async function horizonPastSeeds(): Promise<string> {
    const [{ last }] = await h.db.query<{ last: string }>(
      'SELECT max(changed_by)::text AS last FROM approval_requests',
    );
    for (const deadline = Date.now() + 60_000; ; await sleep(100)) {
      const { horizon } = await approvalChangesSince(h.db, undefined, ['no-agent']);
      if (BigInt(horizon) > BigInt(last)) return horizon;
      if (Date.now() > deadline) throw new Error(`a transaction older than ${last} stayed open for a minute`);
    }
  }

  it('reads the changes since its last read, not the waiting ones', async () => {
    const horizon = await horizonPastSeeds();
    await h.db.exec(answer('s', 1) + answer('s', 2));
    const { explainer, plans } = explaining(h.db);
    await approvalChangesSince(explainer, horizon);
    // The two changed, and at most their agents' and conversations' rows that check them.
    const read = rowsRead(plans[0]);
    expect(read.approval_requests).toBe(2);
    expect(Math.max(...Object.values(read))).toBe(2);
    expect((await approvalChangesSince(h.db, horizon)).changes).toEqual([
      expect.objectContaining({ request_message_id: 'sm1', waits: false }),
      expect.objectContaining({ request_message_id: 'sm2', waits: false }),
    ]);
  });

  it('announces a transaction that commits after a read by the next read, whatever its id', async () => {
    const feed = new ApprovalChangeFeed(h.db);
    await feed.start();
    let commit!: () => void;
    const committed = new Promise<void>((resolve) => (commit = resolve));
    let written!: () => void;
    const wrote = new Promise<void>((resolve) => (written = resolve));
    // The earlier transaction (the lower id) writes first and commits last.
    const earlier = h.db.transaction(async (tx) => {
      await tx.exec(answer('s', 3));
      written();
      await committed;
    });
    await wrote;
    await h.db.exec(answer('s', 4));
    expect(await feed.read()).toEqual([{ approval_request_id: 'sm4', change: 'answered' }]);
    commit();
    await earlier;
    expect(await feed.read()).toEqual([{ approval_request_id: 'sm3', change: 'answered' }]);
  });

  it('announces the end of a pause whose agent is deleted, to the feeds that see that agent', async () => {
    const mine = new ApprovalChangeFeed(h.db, ['sa5']);
    const others = new ApprovalChangeFeed(h.db, ['sa6']);
    await mine.start();
    await others.start();
    await h.db.exec(`DELETE FROM agents WHERE id = 'sa5'`);
    expect(await mine.read()).toEqual([{ approval_request_id: 'sm5', change: 'answered' }]);
    expect(await others.read()).toEqual([]);
  });
});
