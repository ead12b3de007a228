/**
 * The approval page, `/approvals`: static files (public/approvals/) where people who write no code
 * answer the tool calls that wait for approval, over the approvals API (src/api/routes/approvals.ts).
 *
 * It is mounted before the credential check, as the API reference is: the page holds no data. Its
 * script asks for the password or a scoped access token, keeps it in the tab's sessionStorage and sends
 * it as `Authorization: Bearer …` with each API call. Browsers never send that header on their own, so
 * another site cannot make a visitor's browser answer for them (no CSRF); and since browsers send their
 * Origin, a scoped access token works here only when it was made for this server's origin
 * (src/api/access.ts).
 */
import path from 'node:path';
import express from 'express';
import { documentedRouter, type DocumentedRouter } from './route-book';
import { PAGES, pageHeaders, serveSharedFiles } from './page-files';

const FILES = path.join(PAGES, 'approvals');

const strictHeaders = pageHeaders();

export function approvalPage(): DocumentedRouter {
  const page = documentedRouter('Approval page', { public: true });
  page.get(
    '/approvals',
    {
      summary: 'The approval page',
      description:
        'Lists the tool calls that wait for approval and answers them. Open without the password: the page asks for it, or for a scoped access token made for this server’s origin.',
      mediaType: 'text/html',
    },
    strictHeaders,
    (_req, res) => res.sendFile(path.join(FILES, 'index.html')),
  );
  serveSharedFiles(page.router, '/approvals', strictHeaders);
  page.router.use('/approvals', strictHeaders, express.static(FILES, { index: false, redirect: false }));
  return page;
}
