import { listWaitingCalls, type WaitingFilters } from '../src/db/approval-requests';
import { useTestDatabase } from './helpers/test-database';
import { explaining, rowsRead } from './helpers/query-plans';

/**
 * The approval inbox's listing (GET /v1/approvals/) on the database alone: every waiting call once, in
 * order, whichever way it is paged; and a page reads about as many rows as it shows, however many
 * pauses wait.
 */
describe('the waiting approvals listing', () => {
  const h = useTestDatabase();

  /**
   * `count` pauses over `agents` agents (request g of agent g % agents, its first in the agent's own
   * history, the rest in a conversation each), g % `callsPer` + 1 calls each, `tie` requests to a
   * requested_at; every `staleEvery`th no longer its conversation's pending approval, every
   * `answeredEvery`th answered. Even agents are tagged team-a; odd calls are of `ask`.
   */
  async function seed(prefix: string, o: { count: number; agents: number; callsPer: number; tie: number }) {
    const { count, agents, callsPer, tie } = o;
    const staleEvery = 7;
    const answeredEvery = 11;
    await h.db.exec(`
      INSERT INTO agents (id, name, agent_type, system, llm_config, tags)
      SELECT '${prefix}a' || a, 'agent ' || a, 'letta_v1_agent', '', '{}',
        CASE WHEN a % 2 = 0 THEN '{team-a}'::text[] ELSE '{}' END
      FROM generate_series(0, ${agents - 1}) a;
      INSERT INTO conversations (id, agent_id)
      SELECT '${prefix}c' || g, '${prefix}a' || (g % ${agents}) FROM generate_series(${agents}, ${count - 1}) g;
      INSERT INTO approval_requests (request_message_id, agent_id, conversation_id, run_id, workflow_id,
        requested_at, answered_at)
      SELECT '${prefix}m' || g, '${prefix}a' || (g % ${agents}),
        CASE WHEN g >= ${agents} THEN '${prefix}c' || g END, 'run', 'workflow',
        '2026-01-01'::timestamptz + make_interval(secs => g / ${tie}),
        CASE WHEN g % ${answeredEvery} = 5 THEN now() END
      FROM generate_series(0, ${count - 1}) g;
      INSERT INTO approval_calls (tool_call_id, request_message_id, position, tool_name, arguments, kind)
      SELECT '${prefix}m' || g || '-' || p, '${prefix}m' || g, p,
        CASE WHEN (g + p) % 2 = 1 THEN 'ask' ELSE 'memory_insert' END, '{}', 'approval'
      FROM generate_series(0, ${count - 1}) g, generate_series(0, g % ${callsPer}) p;
      UPDATE agents SET pending_approval = jsonb_build_object('message_id',
        CASE WHEN substr(id, ${prefix.length + 2})::int % ${staleEvery} = 3 THEN 'gone'
          ELSE '${prefix}m' || substr(id, ${prefix.length + 2}) END)
      WHERE id LIKE '${prefix}a%';
      UPDATE conversations SET pending_approval = jsonb_build_object('message_id',
        CASE WHEN substr(id, ${prefix.length + 2})::int % ${staleEvery} = 3 THEN 'gone'
          ELSE '${prefix}m' || substr(id, ${prefix.length + 2}) END)
      WHERE id LIKE '${prefix}c%';
    `);
  }

  /** What the listing must give: every waiting call, by a plain query of every row, oldest first. */
  async function everyWaiting(prefix: string, filters: WaitingFilters): Promise<string[]> {
    const rows = await h.db.query<{ id: string }>(
      `SELECT c.tool_call_id AS id FROM approval_calls c
       JOIN approval_requests r ON r.request_message_id = c.request_message_id
       JOIN agents a ON a.id = r.agent_id
       LEFT JOIN conversations cv ON cv.id = r.conversation_id
       WHERE r.answered_at IS NULL AND r.agent_id LIKE $1 || '%'
         AND coalesce(cv.pending_approval, a.pending_approval)->>'message_id' = r.request_message_id
         AND ($2::text[] IS NULL OR r.agent_id = ANY($2)) AND ($3::text IS NULL OR c.tool_name = $3)
         AND ($4::text IS NULL OR $4 = ANY(a.tags))
       ORDER BY r.requested_at, r.request_message_id, c.position`,
      [prefix, filters.agentIds ?? null, filters.toolName ?? null, filters.tag ?? null],
    );
    return rows.map((row) => row.id);
  }

  /** The listing walked page by page from `start` (none: its first page), `after` or `before` each. */
  async function walk(
    filters: WaitingFilters,
    page: { limit: number; order: 'asc' | 'desc' },
    way: 'after' | 'before',
    start?: string,
  ): Promise<string[]> {
    const ids: string[] = [];
    for (let cursor = start; ;) {
      const calls = await listWaitingCalls(h.db, filters, { ...page, [way]: cursor });
      if (!calls.length) return ids;
      const pageIds = calls.map((call) => call.tool_call_id);
      ids.push(...(way === 'after' ? pageIds : pageIds.reverse()));
      cursor = ids.at(-1);
    }
  }

  it('visits every waiting call once, in order, paged either way, under each filter', async () => {
    await seed('p', { count: 60, agents: 6, callsPer: 3, tie: 3 });
    const filtersOf: WaitingFilters[] = [
      {},
      { agentIds: ['pa1', 'pa4'] },
      { toolName: 'ask' },
      { tag: 'team-a' },
    ];
    for (const filters of filtersOf) {
      const oldestFirst = await everyWaiting('p', filters);
      expect(oldestFirst.length).toBeGreaterThan(5);
      for (const order of ['asc', 'desc'] as const) {
        const listed = order === 'asc' ? oldestFirst : [...oldestFirst].reverse();
        for (const limit of [1, 2, 5]) {
          expect(await walk(filters, { limit, order }, 'after')).toEqual(listed);
          // Backwards from the last: every one before it, nearest first.
          const last = listed.at(-1)!;
          expect(await walk(filters, { limit, order }, 'before', last)).toEqual(
            listed.slice(0, -1).reverse(),
          );
        }
      }
    }
  });

  it('reads about as many rows as a page shows, at its head, deep down and for one agent', async () => {
    await seed('s', { count: 20_000, agents: 2_000, callsPer: 2, tie: 1 });
    const { explainer, plans } = explaining(h.db);
    const limit = 50;
    // The call of request 1,000, 95% down the newest-first list.
    const deep = 'sm1000-0';
    await listWaitingCalls(explainer, {}, { limit, order: 'desc' });
    await listWaitingCalls(explainer, {}, { limit, order: 'desc', after: deep });
    await listWaitingCalls(explainer, {}, { limit, order: 'asc', before: deep });
    await listWaitingCalls(explainer, { agentIds: ['sa7'] }, { limit, order: 'desc' });
    for (const plan of plans) {
      const read = rowsRead(plan);
      expect(read.approval_requests).toBeGreaterThan(0);
      // A stale request or an answered one passed over, and the cursor's own: a few more than the page.
      expect(Object.entries(read).filter(([, rows]) => rows > 4 * limit)).toEqual([]);
    }
  });
});
