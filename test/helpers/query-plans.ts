/** Plans of the statements a repository function runs, and the rows they read: for tests of a query's cost. */
import type { Queryable } from '../../src/db/database';

/** The plan of each statement `db` runs, run by EXPLAIN ANALYZE instead. */
export function explaining(db: Queryable) {
  const plans: unknown[] = [];
  const explainer: Queryable = {
    exec: (script) => db.exec(script),
    query: async <Row>(sql: string, params?: unknown[]) => {
      const [row] = await db.query<{ 'QUERY PLAN': unknown[] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`,
        params,
      );
      plans.push(row['QUERY PLAN'][0]);
      return [] as Row[];
    },
  };
  return { explainer, plans };
}

/** Rows each table's scans read in a plan (each scan's rows times its loops, before filters too). */
export function rowsRead(plan: unknown): Record<string, number> {
  const read: Record<string, number> = {};
  const visit = (node: Record<string, unknown>) => {
    const table = node['Relation Name'] as string | undefined;
    if (table) {
      const rows =
        ((node['Actual Rows'] as number) + ((node['Rows Removed by Filter'] as number) ?? 0)) *
        (node['Actual Loops'] as number);
      read[table] = (read[table] ?? 0) + rows;
    }
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) visit(child);
  };
  visit((plan as { Plan: Record<string, unknown> }).Plan);
  return read;
}
