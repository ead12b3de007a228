import type { Queryable } from '../src/db/database';
import { insertApprovalRequest, recordDecisions, type ApprovalRequestRow } from '../src/db/approval-requests';
import { waitingCallCounts } from '../src/db/gauges';
import { useTestDatabase } from './helpers/test-database';

/**
 * The metrics' count of waiting calls (letta_approvals_pending) on the database alone: it equals a
 * count of every waiting call after pauses, answers, expiries, cancels, deletions and rolled-back
 * transactions, many at once, and a scrape reads a few rows however many wait.
 */
describe('the waiting calls count', () => {
  const h = useTestDatabase();
  const KINDS = ['approval', 'client_tool', 'elicitation'] as const;

  /** What the gauge must give: every call of an unanswered request, by kind. */
  async function countedByHand(): Promise<Record<string, number>> {
    const rows = await h.db.query<{ kind: string; count: number }>(
      `SELECT c.kind, count(*)::int AS count FROM approval_requests r
         JOIN approval_calls c USING (request_message_id)
       WHERE r.answered_at IS NULL GROUP BY c.kind`,
    );
    return Object.fromEntries(rows.map((row) => [row.kind, row.count]));
  }

  async function gauge(): Promise<Record<string, number>> {
    const rows = await waitingCallCounts(h.db);
    return Object.fromEntries(rows.filter((row) => row.count !== 0).map((row) => [row.kind, row.count]));
  }

  /** Pause `id` on g % 3 + 1 calls, of kinds from g on. */
  const pause = (tx: Queryable, id: string, g: number) =>
    insertApprovalRequest(tx, {
      request_message_id: id,
      agent_id: 'agent',
      conversation_id: null,
      run_id: 'run',
      workflow_id: 'workflow',
      requested_at: new Date(),
      expires_at: null,
      calls: Array.from({ length: (g % 3) + 1 }, (_, p) => ({
        tool_call_id: `${id}-${p}`,
        tool_name: 'ask',
        arguments: '{}',
        kind: KINDS[(g + p) % KINDS.length],
        elicitation: null,
      })),
    });

  const OUTCOMES: NonNullable<ApprovalRequestRow['outcome']>[] = ['answered', 'expired', 'cancelled'];
  const answer = (tx: Queryable, id: string, g: number) =>
    recordDecisions(tx, id, {
      answerRunId: 'answer',
      answeredBy: { kind: 'password' },
      outcome: OUTCOMES[g % OUTCOMES.length],
      decisions: [],
    });

  it('equals the waiting calls after pauses, answers, expiries, cancels and deletions', async () => {
    for (let g = 0; g < 30; g++) await pause(h.db, `s${g}`, g);
    expect(await gauge()).toEqual(await countedByHand());
    expect(Object.keys(await gauge())).toEqual(expect.arrayContaining([...KINDS]));
    for (let g = 0; g < 30; g += 2) await answer(h.db, `s${g}`, g);
    // An answer recorded again changes nothing.
    await answer(h.db, 's0', 0);
    await h.db.query(`DELETE FROM approval_requests WHERE request_message_id IN ('s1', 's2')`);
    await h.db.query(`DELETE FROM approval_calls WHERE tool_call_id = 's5-0'`);
    await h.db.query(`UPDATE approval_calls SET kind = 'approval' WHERE tool_call_id = 's7-1'`);
    expect(await gauge()).toEqual(await countedByHand());
  });

  it('stays exact with many at once, some rolled back, and a scrape reads a few rows', async () => {
    const rolledBack = new Error('rolled back');
    const work = Array.from({ length: 2_000 }, (_, g) =>
      h.db
        .transaction(async (tx) => {
          await pause(tx, `c${g}`, g);
          if (g % 3 === 0) await answer(tx, `c${g}`, g);
          if (g % 7 === 0) throw rolledBack;
        })
        .catch((error: unknown) => {
          if (error !== rolledBack) throw error;
        }),
    );
    await Promise.all(work);
    await Promise.all(
      Array.from({ length: 2_000 }, (_, g) =>
        g % 5 === 1 ? h.db.transaction((tx) => answer(tx, `c${g}`, g)) : undefined,
      ),
    );
    const counted = await countedByHand();
    expect(Object.values(counted).reduce((a, b) => a + b)).toBeGreaterThan(1_000);
    expect(await gauge()).toEqual(counted);
    // A rolled-back transaction may have taken its fold back with it: 256 deltas more, one after the
    // other, pass a fold that holds.
    for (let g = 0; g < 256; g++) await pause(h.db, `q${g}`, 0);
    expect(await gauge()).toEqual(await countedByHand());
    const [{ deltas }] = await h.db.query<{ deltas: number }>(
      'SELECT count(*)::int AS deltas FROM waiting_call_deltas',
    );
    expect(deltas).toBeLessThanOrEqual(256 + KINDS.length);
  });
});
