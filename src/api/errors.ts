import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import type { Logger } from '../logger';
import { SecretsKeyError } from '../secrets';

/**
 * An error with an HTTP status, answered as Letta (FastAPI) does: `{"detail": ...}`. The TS client
 * retries 409 and 422 unless told not to, and retrying them cannot help, so they say so.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
  }
}

export const notFound = (what: string) => new HttpError(404, `${what} not found`);

export function sendError(res: Response, status: number, detail: unknown): void {
  if (status === 409 || status === 422) res.setHeader('x-should-retry', 'false');
  res.status(status).json({ detail });
}

export const unknownRoute: RequestHandler = (_req, res) => sendError(res, 404, 'Not Found');

/** Last handler: known errors keep their status; body-parser's get theirs; anything else is a logged 500. */
export function errorHandler(log: Logger): ErrorRequestHandler {
  return (error, req, res, _next) => {
    if (error instanceof HttpError) return sendError(res, error.status, error.detail);
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
    log.error({ err: error, method: req.method, path: req.path }, 'unhandled error in request');
    // A server misconfiguration the operator must fix; the text names the setting and holds no secret.
    sendError(res, 500, error instanceof SecretsKeyError ? error.message : 'An unknown error occurred');
  };
}
