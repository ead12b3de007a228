import { isGrpcServiceError, ServiceError } from '@temporalio/client';
import { ModelApiError } from '../llm/types';
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import type { Logger } from '../logger';
import { SecretsKeyError } from '../secrets';
import { DomainError, notFound, type DomainErrorKind } from '../errors';

/**
 * An error with an HTTP status, answered as Letta (FastAPI) does: `{"detail": ...}`. The TS client
 * retries 409 and 422 unless told not to, and retrying them cannot help, so they say so.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
    /** Headers the answer carries (a 503's Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
  }
}

/** The core's errors (src/errors.ts), as HTTP answers. */
const DOMAIN_STATUS: Record<DomainErrorKind, number> = { invalid: 400, not_found: 404, conflict: 409 };

export { notFound };

export function sendError(res: Response, status: number, detail: unknown): void {
  if (status === 409 || status === 422) res.setHeader('x-should-retry', 'false');
  res.status(status).json({ detail });
}

export const unknownRoute: RequestHandler = (_req, res) => sendError(res, 404, 'Not Found');

/**
 * PostgreSQL's refusal of what a request asked to store: a value it cannot take (SQLSTATE class 22,
 * e.g. a number out of range), a constraint (class 23) or a size limit (54). The transaction rolled
 * back, so nothing was stored; the client gets a 4xx instead of a 500.
 */
function databaseRefusal(error: unknown): HttpError | undefined {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: string };
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  if (code.startsWith('22') || code.startsWith('54'))
    return new HttpError(422, [
      { type: 'value_refused', loc: ['body'], msg: `a value was refused: ${message}` },
    ]);
  if (code.startsWith('23')) return new HttpError(409, `The request conflicts with stored data: ${message}`);
  return undefined;
}

/** gRPC codes of a Temporal that is there but cannot answer now: DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNAVAILABLE. */
const TRANSIENT_GRPC_CODES = new Set([4, 8, 14]);

/** Temporal unreachable or overloaded, after the client's own retries: a 503 the caller may retry. */
function temporalUnavailable(error: unknown): HttpError | undefined {
  const cause = error instanceof ServiceError ? error.cause : error;
  if (!isGrpcServiceError(cause) || !TRANSIENT_GRPC_CODES.has(cause.code)) return undefined;
  return new HttpError(503, `Temporal is not answering now (${cause.details}): try again shortly`);
}

/** Last handler: known errors keep their status; body-parser's get theirs; anything else is a logged 500. */
export function errorHandler(log: Logger): ErrorRequestHandler {
  return (error, req, res, _next) => {
    if (error instanceof HttpError) return sendError(res.set(error.headers), error.status, error.detail);
    if (error instanceof DomainError) return sendError(res, DOMAIN_STATUS[error.kind], error.detail);
    if (error?.type === 'entity.parse.failed') {
      return sendError(res, 422, [
        { type: 'json_invalid', loc: ['body'], msg: `JSON decode error: ${error.message}` },
      ]);
    }
    if (error?.type === 'entity.too.large') {
      return sendError(res, 413, `Request body too large (limit ${error.limit} bytes)`);
    }
    if (typeof error?.status === 'number' && error.status >= 400 && error.status < 500) {
      return sendError(res, error.status, error.message);
    }
    if (error instanceof ModelApiError) {
      // A model provider (embeddings, say) refused or failed: not this server's fault, nor the caller's.
      log.warn({ err: error, method: req.method, path: req.path }, 'a model provider failed a request');
      return sendError(res, 502, `The model provider failed: ${error.message}`);
    }
    const unavailable = temporalUnavailable(error);
    if (unavailable) {
      log.warn({ err: error, method: req.method, path: req.path }, 'Temporal did not answer a request');
      return sendError(res, unavailable.status, unavailable.detail);
    }
    const refusal = databaseRefusal(error);
    if (refusal) {
      // The edge checks should have caught it: worth a look, but the client's input, not our fault.
      log.warn({ err: error, method: req.method, path: req.path }, 'the database refused a request');
      return sendError(res, refusal.status, refusal.detail);
    }
    log.error({ err: error, method: req.method, path: req.path }, 'unhandled error in request');
    // A server misconfiguration the operator must fix; the text names the setting and holds no secret.
    sendError(res, 500, error instanceof SecretsKeyError ? error.message : 'An unknown error occurred');
  };
}
