/**
 * Checks every request's text before any route reads it, in one place: PostgreSQL refuses a NUL
 * character in `text` and `jsonb` and a lone UTF-16 surrogate in `jsonb` (the driver would quietly
 * replace one in `text`), and code that walks JSON recursively can run out of stack on deep nesting.
 * Such input is the client's mistake: 422 in FastAPI's shape, naming where it is, and nothing stored.
 */
import type { RequestHandler } from 'express';
import { HttpError } from './errors';

type Where = 'body' | 'query' | 'path' | 'file';

const problemOf = (text: string) =>
  text.includes('\u0000')
    ? 'contains a NUL character (\\u0000), which cannot be stored'
    : !text.isWellFormed()
      ? 'contains a lone UTF-16 surrogate, which is not valid Unicode'
      : undefined;

const refuse = (loc: (string | number)[], type: string, msg: string) =>
  new HttpError(422, [{ type, loc, msg }]);

/**
 * Walks `value` without recursion: every string (keys too) must be storable; depth at most `maxDepth`.
 * Also for JSON that arrives otherwise than as the body (an uploaded agent file).
 */
export function checkJson(value: unknown, where: Where, maxDepth: number): void {
  const pending: { value: unknown; path: (string | number)[] }[] = [{ value, path: [where] }];
  while (pending.length) {
    const { value: item, path } = pending.pop()!;
    if (path.length - 1 > maxDepth)
      throw refuse(path.slice(0, 4), 'json_too_deep', `nested deeper than ${maxDepth} levels`);
    if (typeof item === 'string') {
      const problem = problemOf(item);
      if (problem) throw refuse(path, 'string_unstorable', problem);
    } else if (Array.isArray(item)) {
      item.forEach((child, i) => pending.push({ value: child, path: [...path, i] }));
    } else if (item && typeof item === 'object') {
      for (const [key, child] of Object.entries(item)) {
        const problem = problemOf(key);
        if (problem) throw refuse([...path, key], 'key_unstorable', `a key ${problem}`);
        pending.push({ value: child, path: [...path, key] });
      }
    }
  }
}

/** The path's segments, decoded as the router will decode its parameters. */
function pathSegments(rawPath: string): string[] {
  return rawPath.split('/').map((segment) => {
    try {
      return decodeURIComponent(segment);
    } catch {
      throw refuse(['path'], 'path_malformed', `malformed percent-encoding in '${segment.slice(0, 100)}'`);
    }
  });
}

export function inputGuard(options: { maxJsonDepth: number }): RequestHandler {
  return (req, _res, next) => {
    checkJson(pathSegments(req.path), 'path', options.maxJsonDepth);
    checkJson(req.query, 'query', options.maxJsonDepth);
    checkJson(req.body, 'body', options.maxJsonDepth);
    next();
  };
}
