/**
 * Routes registered together with what the API reference says of them: each router of src/api/routes
 * declares a route's summary and the zod schemas of its body, query and answer beside its handler, and
 * /openapi.json is generated from those declarations (src/api/openapi.ts). The schemas are the ones the
 * handler parses with and the shape functions return, so the document cannot describe another API.
 */
import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { RouteParameters } from 'express-serve-static-core';
import type { z } from 'zod';
import { scopedAccess, type ScopedTokenUse } from './scoped-access';
import { parseParams } from './validation';
import { sendError } from './errors';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** What the API reference says of one route, and what a scoped access token needs to reach it. */
export interface RouteDoc extends ScopedTokenUse {
  summary: string;
  description?: string;
  /** A JSON body. */
  body?: z.ZodType;
  /** A multipart/form-data body (uploads): its fields, a file field as `z.any()` with `format: binary`. */
  form?: z.ZodType;
  query?: z.ZodObject;
  /** The path's parameters as the handler parses them (an id's pattern), by their express names. */
  params?: z.ZodObject;
  /** The JSON of a 200 answer; none: the route answers with `{}`. */
  response?: z.ZodType;
  /** Answers 204 with no body. */
  noContent?: boolean;
  /** Error statuses the route answers beyond those of the access checks and the API's own (openapi.ts). */
  errors?: number[];
  /** Answers with server-sent events (each `data:` one JSON of `response`) when asked to stream. */
  streams?: boolean;
  /** Answers with a document of this media type rather than JSON (the reference's HTML page). */
  mediaType?: string;
}

export interface DocumentedRoute extends RouteDoc {
  method: Method;
  /** Express's form: `/v1/agents/:agentId`. */
  path: string;
  /** The group the reference lists it under. */
  tag: string;
  /** Answers without the password (mounted before the access checks). */
  public: boolean;
}

/** Registers a route; its handlers' `req.params` are typed from the path, as with express's own. */
type Register = <Path extends string>(
  path: Path,
  doc: RouteDoc,
  ...handlers: RequestHandler<RouteParameters<Path>>[]
) => void;

/** An express Router whose routes are registered with their documentation. */
export interface DocumentedRouter extends Record<Method, Register> {
  router: Router;
  routes: DocumentedRoute[];
}

export interface RouterOptions {
  /** Its routes answer without the password: the app mounts the router before the access checks. */
  public?: boolean;
  /** The path parameters of its routes, by their express names: checked before any handler (422). */
  params?: z.ZodObject;
}

/** The parameters of `path` that `params` declares, checked as the document says (422 otherwise). */
function paramCheck(path: string, params: z.ZodObject | undefined): RequestHandler[] {
  const names = [...path.matchAll(/:(\w+)/g)].map((match) => match[1]).filter((name) => params?.shape[name]);
  if (!params || !names.length) return [];
  const schema = params.pick(Object.fromEntries(names.map((name) => [name, true])) as Record<string, true>);
  return [
    (req, _res, next) => {
      parseParams(schema, req);
      next();
    },
  ];
}

export function documentedRouter(tag: string, options: RouterOptions = {}): DocumentedRouter {
  const router = Router();
  const routes: DocumentedRoute[] = [];
  const register =
    (method: Method): Register =>
    (path, doc, ...handlers) => {
      const params = doc.params ?? options.params;
      routes.push({
        ...doc,
        ...(params ? { params } : {}),
        method,
        path,
        tag,
        public: options.public ?? false,
      });
      router[method](
        path,
        // A token this route is not for is refused whatever its ids: access before their form.
        scopedAccess(method, path, doc),
        ...paramCheck(path, params),
        ...(handlers as RequestHandler[]),
      );
    };
  return {
    router,
    routes,
    get: register('get'),
    post: register('post'),
    put: register('put'),
    patch: register('patch'),
    delete: register('delete'),
  };
}

/**
 * A route's handler as a named function of its resource's file: what the router's routes share comes
 * first, then express's arguments (`req.params` typed from the path, as with express's own).
 */
export type RouteHandler<Shared, Path extends string> = (
  shared: Shared,
  req: Request<RouteParameters<Path>>,
  res: Response,
  next: NextFunction,
) => unknown;

/**
 * Registers a route of a table: its path, what the reference says of it, the middleware it alone runs
 * (a body parser of its own), and its named handler.
 */
type RegisterHandler<Shared> = <Path extends string>(
  path: Path,
  doc: RouteDoc,
  ...handlers: [...RequestHandler<RouteParameters<Path>>[], RouteHandler<Shared, Path>]
) => void;

/**
 * A router's table of routes, method and path to named handler, each handler given `shared` (what the
 * router's routes share: the API's context, and what the router builds from it once).
 */
export function routeTable<Shared>(
  router: DocumentedRouter,
  shared: Shared,
): Record<Method, RegisterHandler<Shared>> {
  const register =
    (method: Method): RegisterHandler<Shared> =>
    (path, doc, ...handlers) => {
      const before = handlers.slice(0, -1) as RequestHandler<RouteParameters<typeof path>>[];
      const handler = handlers[handlers.length - 1] as RouteHandler<Shared, typeof path>;
      router[method](path, doc, ...before, (req, res, next) => handler(shared, req, res, next));
    };
  return {
    get: register('get'),
    post: register('post'),
    put: register('put'),
    patch: register('patch'),
    delete: register('delete'),
  };
}

/**
 * Of the documented paths `path` matches, the one OpenAPI would pick: a literal segment before a
 * parameter, from the left (`/v1/folders/count` before `/v1/folders/:folderId`).
 */
function documentedPathOf(templates: string[][], path: string): string[] | undefined {
  const segments = path.replace(/(.)\/$/, '$1').split('/');
  const matching = templates.filter(
    (template) =>
      template.length === segments.length &&
      template.every((part, i) => (part.startsWith(':') ? segments[i] !== '' : part === segments[i])),
  );
  const literalsFirst = (a: string[], b: string[]) => {
    const differs = a.findIndex((part, i) => part.startsWith(':') !== b[i].startsWith(':'));
    return differs < 0 ? 0 : a[differs].startsWith(':') ? 1 : -1;
  };
  return matching.sort(literalsFirst)[0];
}

/**
 * A request for a documented path with a method the document does not list for it (OPTIONS and TRACE
 * too) gets 405 with `Allow`, the methods it lists (HEAD with GET, as express answers it).
 */
export function methodNotAllowed(routes: DocumentedRoute[]): RequestHandler {
  const methods = new Map<string, Set<string>>();
  for (const route of routes) {
    const allowed = methods.get(route.path) ?? new Set<string>();
    allowed.add(route.method.toUpperCase());
    if (route.method === 'get') allowed.add('HEAD');
    methods.set(route.path, allowed);
  }
  const templates = [...methods.keys()].map((path) => path.split('/'));
  return (req, res, next) => {
    const template = documentedPathOf(templates, req.path);
    const allowed = template && methods.get(template.join('/'));
    if (!allowed || allowed.has(req.method)) return next();
    res.setHeader('allow', [...allowed].sort().join(', '));
    sendError(res, 405, 'Method Not Allowed');
  };
}
