/**
 * Each API request counted and timed by its route template (never its path: ids would be labels), as
 * its response ends or its client goes away (a stream it stopped reading).
 */
import type { RequestHandler } from 'express';
import { routeTemplate } from '../observability/http';
import { httpRequestDuration, httpRequests, secondsSince } from '../observability/metrics';

export const httpMetrics: RequestHandler = (req, res, next) => {
  const started = process.hrtime.bigint();
  res.once('close', () => {
    const labels = { method: req.method, route: routeTemplate(req) ?? 'unmatched' };
    httpRequests.inc({ ...labels, status: String(res.statusCode) });
    httpRequestDuration.observe(labels, secondsSince(started));
  });
  next();
};
