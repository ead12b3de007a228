/**
 * Each HTTP request in a server span, the root of its trace (or a child of the caller's `traceparent`):
 * named by its method and route template once routing has found it, with its status; the agent, run
 * or step the path names are on the span and in the request's log lines. No query, header or body.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import { idAttributes, withLearntIds, type LettaIds } from '../context-ids';
import type { Logger } from '../logger';
import { tracer } from './tracing';

/** The ids a route's path parameters name. */
function pathIds(params: Request['params']): LettaIds {
  const ids: LettaIds = {};
  if (typeof params?.agentId === 'string') ids.agentId = params.agentId;
  if (typeof params?.runId === 'string') ids.runId = params.runId;
  if (typeof params?.stepId === 'string') ids.stepId = params.stepId;
  return ids;
}

const READS = new Set(['GET', 'HEAD']);

/** The route template the request matched (`/v1/agents/:agentId/messages`), or none. */
export const routeTemplate = (req: Request): string | undefined =>
  req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : undefined;

export function traceRequests(log: Logger): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer().startSpan(
      req.method,
      {
        kind: SpanKind.SERVER,
        attributes: { [ATTR_HTTP_REQUEST_METHOD]: req.method, [ATTR_URL_SCHEME]: req.protocol },
      },
      parent,
    );
    const started = performance.now();
    const finished = () => {
      const route = routeTemplate(req);
      if (route) span.updateName(`${req.method} ${route}`).setAttribute(ATTR_HTTP_ROUTE, route);
      span.setAttributes({
        [ATTR_HTTP_RESPONSE_STATUS_CODE]: res.statusCode,
        // A read names no run on its span: the span store keeps the traces that name one as that
        // run's trace, and a client polling a run would bury its work under its reads.
        ...(READS.has(req.method) ? {} : idAttributes(pathIds(req.params))),
      });
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      const durationMs = Math.round(performance.now() - started);
      log.debug({ method: req.method, route, status: res.statusCode, durationMs }, 'request answered');
    };
    res.once('close', () => span.isRecording() && span.end());
    // Routing sets `req.params` after this context is made: log lines read the path's ids as they go.
    context.with(trace.setSpan(parent, span), () =>
      withLearntIds(
        () => pathIds(req.params),
        () => {
          // The response's events run in the socket's context: the line names the request's ids.
          res.once('finish', context.bind(context.active(), finished));
          next();
        },
      ),
    );
  };
}

/**
 * A middleware that calls `next` from a stream's callback (a body parser) in the request's context: the
 * stream's events run in the context the socket was made in, and the rest of the request would lose its
 * trace.
 */
export function keepingContext(middleware: RequestHandler): RequestHandler {
  return (req, res, next) => middleware(req, res, context.bind(context.active(), next));
}
