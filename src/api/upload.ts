/** A multipart upload of one file (multer), kept in memory up to a configured size. */
import multer from 'multer';
import type { RequestHandler } from 'express';
import { HttpError } from './errors';

/**
 * The route's file in `req.file`: more than `maxBytes` is a 413 naming `what` and the limit, a form
 * past multer's limits a 400, and a body that is not well-formed multipart a 400.
 */
export function receiveFile(
  what: string,
  maxBytes: number,
  limits: { fields: number; fieldSize: number; parts: number },
): RequestHandler {
  const upload = multer({
    storage: multer.memoryStorage(),
    limits: { fileSize: maxBytes, files: 1, ...limits },
    defParamCharset: 'utf8',
  }).single('file');
  return (req, res, next) =>
    upload(req, res, (error: unknown) => {
      if (!error) return next();
      if (error instanceof multer.MulterError) {
        if (error.code === 'LIMIT_FILE_SIZE')
          return next(new HttpError(413, `${what} too large: the most it may have is ${maxBytes} bytes`));
        return next(
          new HttpError(400, `Invalid upload: ${error.message}${error.field ? ` (${error.field})` : ''}`),
        );
      }
      // busboy's refusals of a body that is not well-formed multipart.
      next(new HttpError(400, `Invalid multipart body: ${(error as Error)?.message ?? 'unreadable'}`));
    });
}
