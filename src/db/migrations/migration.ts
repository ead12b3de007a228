/** One schema migration: its version orders it, and once shipped it never changes. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}
