/**
 * The AG-UI chat page, `/ag-ui`: static files (public/ag-ui/) where a person chats with an agent through
 * the AG-UI endpoint (src/api/routes/ag-ui.ts), driven by the published `@ag-ui/client` as any AG-UI
 * frontend is, with one frontend tool that acts on the page.
 *
 * No build step: the browser loads `@ag-ui/client` and the modules it imports from node_modules, under
 * `/ag-ui/modules/` (the path below node_modules), through the import map in public/ag-ui/index.html.
 * Only the ES module folders of those packages are served, a fixed list, nothing else of node_modules.
 * The import map is an inline script (a browser loads none from a file): the Content-Security-Policy
 * admits it by its hash, and no other inline script.
 *
 * Mounted before the credential check, as the approval page is (src/api/approval-page.ts): the page and
 * the modules hold no data; its script asks for the password or a scoped access token, keeps it in the
 * tab's sessionStorage and sends it as `Authorization: Bearer …` with each call.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import express, { type RequestHandler } from 'express';
import { projectRoot } from '../paths';
import { documentedRouter, type DocumentedRouter } from './route-book';
import { sendError } from './errors';
import { PAGES, pageHeaders, serveSharedFiles } from './page-files';

const FILES = path.join(PAGES, 'ag-ui');
const NODE_MODULES = path.join(projectRoot, 'node_modules');
const MODULES_PATH = '/ag-ui/modules';

/**
 * What `@ag-ui/client`'s ES module build (dist/index.mjs) imports, all the way down, as node resolves
 * each import from its importer with the `browser` and `import` conditions: paths below node_modules, a
 * folder or one file each. The client has its own rxjs and zod; rxjs imports its files without an
 * extension, which `.js` completes.
 */
export const SERVED_MODULES = [
  '@ag-ui/client/dist',
  '@ag-ui/client/node_modules/rxjs/dist/esm5',
  '@ag-ui/client/node_modules/zod/v4',
  '@ag-ui/core/dist',
  '@ag-ui/proto/dist',
  '@bufbuild/protobuf/dist/esm',
  'compare-versions/lib/esm',
  'fast-json-patch/index.mjs',
  'fast-json-patch/module',
  'tslib/tslib.es6.mjs',
  'untruncate-json/dist/esm',
  'uuid/dist/esm-browser',
  'zod/v4',
];

/** A module is a `.js` or `.mjs` file, or a name that `.js` completes. */
const MODULE_NAME = /\/[^/.]+(\.m?js)?$/;

/** The page, and the hash of its one inline script, the import map, as a CSP source. */
function readPage(): { html: string; importMapHash: string } {
  const html = fs.readFileSync(path.join(FILES, 'index.html'), 'utf8');
  const importMap = /<script type="importmap">([\s\S]*?)<\/script>/.exec(html);
  if (!importMap) throw new Error('public/ag-ui/index.html has no import map');
  const digest = createHash('sha256').update(importMap[1], 'utf8').digest('base64');
  return { html, importMapHash: `sha256-${digest}` };
}

const notServed: RequestHandler = (_req, res) => sendError(res, 404, 'Not a module this page loads');

const onlyModules: RequestHandler = (req, res, next) =>
  MODULE_NAME.test(req.path) ? next() : notServed(req, res, next);

/** Answers a GET of the path it is mounted at with `file`, and nothing below it. */
const sendOnly =
  (file: string): RequestHandler =>
  (req, res, next) =>
    req.path === '/' && (req.method === 'GET' || req.method === 'HEAD')
      ? res.sendFile(file)
      : notServed(req, res, next);

export function agUiPage(): DocumentedRouter {
  const { html, importMapHash } = readPage();
  const strictHeaders = pageHeaders([importMapHash]);
  const page = documentedRouter('AG-UI chat page', { public: true });
  page.get(
    '/ag-ui',
    {
      summary: 'The AG-UI chat page',
      description:
        'Chats with an agent through the AG-UI endpoint with `@ag-ui/client`, with a frontend tool that sets the page’s accent colour. Open without the password: the page asks for it, or for a scoped access token made for this server’s origin.',
      mediaType: 'text/html',
    },
    strictHeaders,
    (_req, res) => res.type('html').send(html),
  );
  for (const served of SERVED_MODULES) {
    const file = path.join(NODE_MODULES, served);
    const url = `${MODULES_PATH}/${served}`;
    if (/\.m?js$/.test(served)) page.router.use(url, strictHeaders, sendOnly(file));
    else
      page.router.use(
        url,
        strictHeaders,
        onlyModules,
        express.static(file, { index: false, redirect: false, extensions: ['js'], fallthrough: false }),
      );
  }
  page.router.use(MODULES_PATH, notServed);
  serveSharedFiles(page.router, '/ag-ui', strictHeaders);
  page.router.use('/ag-ui', strictHeaders, express.static(FILES, { index: false, redirect: false }));
  return page;
}
