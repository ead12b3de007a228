import type { Request } from 'express';
import type { z } from 'zod';
import { HttpError } from './errors';

/** FastAPI's 422 detail: one entry per problem, with where it is. */
function details(error: z.ZodError, where: 'body' | 'query' | 'path') {
  return error.issues.map((issue) => ({
    type: issue.code,
    loc: [where, ...issue.path.map(String)],
    msg: issue.message,
  }));
}

export function parseBody<S extends z.ZodType>(schema: S, req: Request): z.infer<S> {
  const parsed = schema.safeParse(req.body ?? {});
  if (!parsed.success) throw new HttpError(422, details(parsed.error, 'body'));
  return parsed.data;
}

export function parseQuery<S extends z.ZodType>(schema: S, req: Request): z.infer<S> {
  const parsed = schema.safeParse(req.query);
  if (!parsed.success) throw new HttpError(422, details(parsed.error, 'query'));
  return parsed.data;
}
