/**
 * Each API request counted and timed by its route template (never its path: ids would be labels), as
 * its response ends or its client goes away (a stream it stopped reading).
 */
import type { RequestHandler } from 'express';
import { httpRequestDuration, httpRequests, secondsSince } from '../observability/metrics';

/** The route that answered, as registered (`/v1/agents/:agent_id`); `unmatched` when none did. */
const routeOf = (req: Parameters<RequestHandler>[0]) =>
  req.route ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';

export const httpMetrics: RequestHandler = (req, res, next) => {
  const started = process.hrtime.bigint();
  res.once('close', () => {
    const labels = { method: req.method, route: routeOf(req) };
    httpRequests.inc({ ...labels, status: String(res.statusCode) });
    httpRequestDuration.observe(labels, secondsSince(started));
  });
  next();
};
