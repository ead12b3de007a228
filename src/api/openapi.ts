/**
 * The OpenAPI 3.1 document of this server, generated from the routes' own declarations
 * (src/api/route-book.ts) by zod-openapi: request and answer shapes are the zod schemas the handlers
 * parse with and answer in, shapes named with `.meta({ id })` becoming components under Letta's names.
 */
import { z } from 'zod';
import {
  createDocument,
  type oas31,
  type ZodOpenApiOperationObject,
  type ZodOpenApiPathsObject,
} from 'zod-openapi';
import type { DocumentedRoute } from './route-book';

/**
 * Letta's (FastAPI's) error answer: a message, or for a 422 one entry per problem, its place a path of
 * names and array indexes.
 */
const ErrorSchema = z
  .object({
    detail: z.union([
      z.string(),
      z.array(
        z.object({
          type: z.string(),
          loc: z.array(z.union([z.string(), z.number().int()])),
          msg: z.string(),
        }),
      ),
    ]),
  })
  .meta({ id: 'HTTPError' });

/** What each error status of the API means, as its answers' descriptions say. */
const ERROR_STATUS: Record<number, string> = {
  400: 'The request is well formed but cannot be done as asked (src/errors.ts `invalid`)',
  401: 'No password or access token, or a wrong one',
  403: 'A `Host` or `Origin` this server does not serve, or a token’s grant that does not cover this',
  404: 'A resource the request names does not exist',
  409: 'The request conflicts with the stored state',
  413: 'The body is larger than MAX_REQUEST_BODY_BYTES',
  422: 'The request does not match its schema: one entry per problem, with where it is',
  429: 'Too many failed password checks from this address (AUTH_FAILURE_LIMIT)',
};

/** Any route can fail on this server's side or a service's behind it (the database, Temporal, a model). */
const SERVER_ERROR = '5XX';

const json = (schema: z.ZodType) => ({ 'application/json': { schema } });

/**
 * Letta's name of a path parameter, which clients generated from Letta's OpenAPI document are built
 * on: ours in snake case (`agentId` → `agent_id`), and under the older `sources` paths a folder's
 * is a source's (`source_id`), as Letta names them there.
 */
function lettaParam(path: string, param: string): string {
  const snake = param.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
  return /\/sources(\/|$)/.test(path) ? snake.replace(/^folder_/, 'source_') : snake;
}

/** An Express path as the OpenAPI document writes it: `/v1/agents/:agentId` → `/v1/agents/{agent_id}`. */
export function openApiPath(path: string): string {
  return path.replace(/:(\w+)/g, (_, param: string) => `{${lettaParam(path, param)}}`);
}

/** The route's path as OpenAPI writes it, with its parameters' names. */
function pathOf(route: DocumentedRoute): { path: string; params: z.ZodObject | undefined } {
  const names = [...route.path.matchAll(/:(\w+)/g)].map((match) => match[1]);
  if (!names.length) return { path: openApiPath(route.path), params: undefined };
  const declared = route.params?.shape ?? {};
  const params = z.object(
    Object.fromEntries(
      names.map((name) => [lettaParam(route.path, name), (declared[name] as z.ZodType) ?? z.string()]),
    ),
  );
  return { path: openApiPath(route.path), params };
}

/** `post /v1/agents/:agentId/messages` → `postV1AgentsAgentIdMessages`: unique per route. */
function operationId(route: DocumentedRoute): string {
  const words = route.path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return route.method + words.map((w) => w[0].toUpperCase() + w.slice(1)).join('');
}

function answerOf(route: DocumentedRoute) {
  if (route.mediaType) return { [route.mediaType]: { schema: z.string() } };
  // A stream with no JSON answer of its own (the approval changes) is only events.
  if (!route.response)
    return route.streams ? { 'text/event-stream': { schema: z.string() } } : json(z.object({}));
  if (!route.streams) return json(route.response);
  return { ...json(route.response), 'text/event-stream': { schema: route.response } };
}

function requestBodyOf(route: DocumentedRoute): ZodOpenApiOperationObject['requestBody'] {
  // A route parses a missing body as `{}` (validation.ts): required where `{}` is refused.
  if (route.body) return { required: !route.body.safeParse({}).success, content: json(route.body) };
  if (route.form) return { required: true, content: { 'multipart/form-data': { schema: route.form } } };
  return undefined;
}

/**
 * The error statuses a route answers: the access checks' (401, 403, 429) where it asks for the password,
 * the API's own (400, 404, 409, 422) on the routes behind them, a body's limit (413), and what the route
 * declares itself.
 */
function errorStatusesOf(route: DocumentedRoute): number[] {
  const statuses = new Set(route.errors ?? []);
  if (!route.public) for (const status of [400, 401, 403, 404, 409, 422, 429]) statuses.add(status);
  if (route.body || route.form) statuses.add(413);
  return [...statuses].sort((a, b) => a - b);
}

function errorAnswersOf(route: DocumentedRoute): ZodOpenApiOperationObject['responses'] {
  const content = route.mediaType ? { [route.mediaType]: { schema: z.string() } } : json(ErrorSchema);
  const answers = errorStatusesOf(route).map((status) => [
    String(status),
    { description: ERROR_STATUS[status] ?? 'An error, in Letta’s shape', content },
  ]);
  answers.push([SERVER_ERROR, { description: 'This server, or a service behind it, failed', content }]);
  return Object.fromEntries(answers) as ZodOpenApiOperationObject['responses'];
}

function operationOf(route: DocumentedRoute, params: z.ZodObject | undefined): ZodOpenApiOperationObject {
  const requestBody = requestBodyOf(route);
  return {
    operationId: operationId(route),
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    ...(route.public ? { security: [] } : {}),
    requestParams: {
      ...(params ? { path: params } : {}),
      ...(route.query ? { query: route.query } : {}),
    },
    ...(requestBody ? { requestBody } : {}),
    responses: {
      ...(route.noContent
        ? { '204': { description: 'Done; no body' } }
        : { '200': { description: 'OK', content: answerOf(route) } }),
      ...errorAnswersOf(route),
    },
  };
}

export function openApiDocument(routes: DocumentedRoute[], info: oas31.InfoObject) {
  const paths: ZodOpenApiPathsObject = {};
  for (const route of routes) {
    const { path, params } = pathOf(route);
    paths[path] = { ...paths[path], [route.method]: operationOf(route, params) };
  }
  return createDocument({
    openapi: '3.1.0',
    info,
    paths,
    components: {
      securitySchemes: {
        password: {
          type: 'http',
          scheme: 'bearer',
          description:
            'The server’s password (LETTA_SERVER_PASSWORD), as the official clients send their API key',
        },
      },
    },
    security: [{ password: [] }],
  });
}
