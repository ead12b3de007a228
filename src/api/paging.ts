import type { Page } from '../db/sql';

/**
 * A page of a short list held in memory (an agent's blocks or tools), with the database lists'
 * cursor rules (src/db/sql.ts `pageOf`): `after` / `before` relative to the order, nearest first.
 */
export function pageOfList<T extends { id: string }>(items: T[], page: Page): T[] {
  const ordered = page.order === 'asc' ? items : [...items].reverse();
  const at = (id: string | undefined) => (id ? ordered.findIndex((item) => item.id === id) : -1);
  const from = page.after ? at(page.after) + 1 : 0;
  const to = page.before ? at(page.before) : ordered.length;
  if ((page.after && from === 0) || (page.before && to < 0)) return [];
  const window = ordered.slice(from, to);
  return page.before && !page.after ? window.slice(-page.limit) : window.slice(0, page.limit);
}
