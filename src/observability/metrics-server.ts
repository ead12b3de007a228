/**
 * `/metrics` on its own address (METRICS_HOST, METRICS_PORT): the server's metrics (metrics.ts), the
 * Node process's, the database's gauges read at each scrape, and the Temporal SDK's, which its runtime
 * serves on a loopback port of its own (temporal-metrics.ts) and which are fetched and appended, so
 * that Prometheus scrapes one target per process.
 */
import type http from 'node:http';
import { collectDefaultMetrics, Gauge } from 'prom-client';
import type { Queryable } from '../db';
import { queuedRunCounts, waitingCallCounts } from '../db/gauges';
import type { Logger } from '../logger';
import { metricsRegistry } from './metrics';

const registers = [metricsRegistry];
let database: { db: Queryable; log: Logger } | undefined;

/** A gauge's reading from the database; a failed query leaves the last value and is logged. */
const fromDatabase = (read: (db: Queryable) => Promise<void>) => async () => {
  if (!database) return;
  await read(database.db).catch((error: Error) =>
    database?.log.warn({ error: error.message }, 'could not read a metric from the database'),
  );
};

const pendingApprovals = new Gauge({
  name: 'letta_approvals_pending',
  help: 'Tool calls waiting for an answer, by kind (approval: a person’s; client_tool: the client’s return; elicitation: an MCP server’s question)',
  labelNames: ['kind'],
  registers,
  collect: fromDatabase(async (db) => {
    const counts = await waitingCallCounts(db);
    for (const kind of ['approval', 'client_tool', 'elicitation']) pendingApprovals.set({ kind }, 0);
    for (const { kind, count } of counts) pendingApprovals.set({ kind }, count);
  }),
});

const longestQueue = new Gauge({
  name: 'letta_queued_runs_longest_session',
  help: 'Runs queued in the session with the most of them',
  registers,
});

const queuedRuns = new Gauge({
  name: 'letta_queued_runs',
  help: 'Runs waiting in their sessions (agent or conversation) for the turn before them to end',
  registers,
  collect: fromDatabase(async (db) => {
    const { queued, longest } = await queuedRunCounts(db);
    queuedRuns.set(queued);
    longestQueue.set(longest);
  }),
});

let processMetrics = false;

export interface MetricsSources {
  db: Queryable;
  log: Logger;
  /** Where the Temporal SDK's runtime serves its metrics, when it does. */
  temporalMetricsUrl?: string;
}

/** The `/metrics` handler; anything else is a 404. */
export function metricsListener(sources: MetricsSources): http.RequestListener {
  database = { db: sources.db, log: sources.log };
  if (!processMetrics) collectDefaultMetrics({ register: metricsRegistry });
  processMetrics = true;
  return (req, res) => {
    if (req.method !== 'GET' || new URL(req.url ?? '/', 'http://metrics').pathname !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: metrics are at /metrics\n');
      return;
    }
    Promise.all([metricsRegistry.metrics(), temporalMetrics(sources)]).then(
      ([own, temporal]) =>
        res.writeHead(200, { 'content-type': metricsRegistry.contentType }).end(own + temporal),
      (error: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${error.message}\n`),
    );
  };
}

/** The Temporal SDK's metrics in the text format; none when its exporter does not answer (logged). */
async function temporalMetrics({ temporalMetricsUrl, log }: MetricsSources): Promise<string> {
  if (!temporalMetricsUrl) return '';
  try {
    const response = await fetch(temporalMetricsUrl, { signal: AbortSignal.timeout(5_000) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const text = await response.text();
    return text.endsWith('\n') || !text ? text : `${text}\n`;
  } catch (error) {
    log.warn({ error: (error as Error).message }, "could not read the Temporal SDK's metrics");
    return '';
  }
}
