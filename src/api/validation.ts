import type { Request } from 'express';
import type { z } from 'zod';
import { HttpError } from './errors';

type Where = 'body' | 'query' | 'path';

/** FastAPI's 422 detail: one entry per problem, with where it is. */
function details(error: z.ZodError, where: Where) {
  return error.issues.map((issue) => ({
    type: issue.code,
    loc: [where, ...issue.path.map(String)],
    msg: issue.message,
  }));
}

function parse<S extends z.ZodType>(schema: S, value: unknown, where: Where): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new HttpError(422, details(parsed.error, where));
  return parsed.data;
}

export const parseBody = <S extends z.ZodType>(schema: S, req: Request): z.infer<S> =>
  parse(schema, req.body ?? {}, 'body');

export const parseQuery = <S extends z.ZodType>(schema: S, req: Request): z.infer<S> =>
  parse(schema, req.query, 'query');

/** Path parameters, e.g. ids of the wrong form: 422, as FastAPI's pattern-checked path parameters. */
export const parseParams = <S extends z.ZodType>(schema: S, req: Request): z.infer<S> =>
  parse(schema, req.params, 'path');
