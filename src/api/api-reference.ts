/**
 * The API's description: `/openapi.json` (OpenAPI 3.1, generated once from the routes' declarations)
 * and `/docs`, a reference page rendered by Swagger UI from files this server serves itself, so that
 * it works without a network. (Swagger UI's one package carries its browser bundle; Scalar's pulls in
 * some 300 MB of front-end dependencies for the same page.)
 */
import path from 'node:path';
import express from 'express';
import { openApiDocument } from './openapi';
import { documentedRouter, type DocumentedRoute, type DocumentedRouter } from './route-book';
import { version } from '../paths';

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>letta-temporal API reference</title>
    <link rel="stylesheet" href="/docs/assets/swagger-ui.css" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="/docs/assets/swagger-ui-bundle.js"></script>
    <script>
      window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true });
    </script>
  </body>
</html>
`;

/** Swagger UI's browser files. */
const SWAGGER_UI = path.dirname(require.resolve('swagger-ui-dist/package.json'));

const INFO = {
  title: 'letta-temporal',
  version,
  description:
    'Letta’s REST API, served by a durable agent server on Temporal: the official Letta clients work against it unchanged.',
};

/** `/openapi.json` describes `routes` and these two routes themselves. */
export function apiReference(routes: DocumentedRoute[]): DocumentedRouter {
  const reference = documentedRouter('API reference', { public: true });
  let document: unknown;
  reference.get(
    '/openapi.json',
    { summary: 'This document (OpenAPI 3.1)', description: 'Open without the password.' },
    (_req, res) => {
      res.json((document ??= openApiDocument([...routes, ...reference.routes], INFO)));
    },
  );
  reference.get(
    '/docs',
    { summary: 'The API reference page', description: 'Open without the password.', mediaType: 'text/html' },
    (_req, res) => {
      res.type('html').send(PAGE);
    },
  );
  reference.router.use('/docs/assets', express.static(SWAGGER_UI, { index: false }));
  return reference;
}
