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
  /** The JSON of a 200 answer; none: the route answers with no body, or with `{}`. */
  response?: z.ZodType;
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

export function documentedRouter(tag: string): DocumentedRouter {
  const router = Router();
  const routes: DocumentedRoute[] = [];
  const register =
    (method: Method): Register =>
    (path, doc, ...handlers) => {
      routes.push({ ...doc, method, path, tag });
      router[method](path, scopedAccess(method, path, doc), ...(handlers as RequestHandler[]));
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
