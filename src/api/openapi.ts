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

/** Letta's (FastAPI's) error answer: a message, or for a 422 one entry per problem. */
const ErrorSchema = z
  .object({
    detail: z.union([
      z.string(),
      z.array(z.object({ type: z.string(), loc: z.array(z.string()), msg: z.string() })),
    ]),
  })
  .meta({ id: 'HTTPError' });

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
function pathOf(route: DocumentedRoute): { path: string; params: string[] } {
  const params = [...route.path.matchAll(/:(\w+)/g)].map((match) => lettaParam(route.path, match[1]));
  return { path: openApiPath(route.path), params };
}

/** `post /v1/agents/:agentId/messages` → `postV1AgentsAgentIdMessages`: unique per route. */
function operationId(route: DocumentedRoute): string {
  const words = route.path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return route.method + words.map((w) => w[0].toUpperCase() + w.slice(1)).join('');
}

function answerOf(route: DocumentedRoute) {
  if (route.mediaType) return { [route.mediaType]: { schema: z.string() } };
  if (!route.response) return json(z.object({}));
  if (!route.streams) return json(route.response);
  return { ...json(route.response), 'text/event-stream': { schema: route.response } };
}

function requestBodyOf(route: DocumentedRoute): ZodOpenApiOperationObject['requestBody'] {
  if (route.body) return { required: true, content: json(route.body) };
  if (route.form) return { required: true, content: { 'multipart/form-data': { schema: route.form } } };
  return undefined;
}

function operationOf(route: DocumentedRoute, params: string[]): ZodOpenApiOperationObject {
  const requestBody = requestBodyOf(route);
  return {
    operationId: operationId(route),
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    requestParams: {
      ...(params.length ? { path: z.object(Object.fromEntries(params.map((p) => [p, z.string()]))) } : {}),
      ...(route.query ? { query: route.query } : {}),
    },
    ...(requestBody ? { requestBody } : {}),
    responses: {
      '200': {
        description: 'OK',
        content: answerOf(route),
      },
      default: { description: 'An error, in Letta’s shape', content: json(ErrorSchema) },
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
