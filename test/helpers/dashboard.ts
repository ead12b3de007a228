import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/paths';

export const DASHBOARD_FILE = path.join(
  projectRoot,
  'deploy',
  'grafana',
  'dashboards',
  'letta-temporal.json',
);

interface Panel {
  type: string;
  datasource?: { uid: string };
  targets?: { expr: string; datasource?: { uid: string } }[];
}

export const dashboardPanels = (): Panel[] =>
  (JSON.parse(fs.readFileSync(DASHBOARD_FILE, 'utf8')) as { panels: Panel[] }).panels;

/**
 * The metric families the dashboard's queries read (the server's `letta_*`, the Temporal SDK's
 * `temporal_*`), a histogram's `_bucket`, `_sum` and `_count` series named by their family.
 */
export function dashboardMetrics(): string[] {
  const exprs = dashboardPanels()
    .flatMap((panel) => panel.targets ?? [])
    .map((target) => target.expr);
  const names = exprs.flatMap((expr) => expr.match(/\b(letta|temporal)_[a-zA-Z0-9_]+/g) ?? []);
  return [...new Set(names.map((name) => name.replace(/_(bucket|sum|count)$/, '')))].sort();
}
