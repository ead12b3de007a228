/**
 * What the server's pages (public/approvals/, public/ag-ui/) have in common: the headers their files
 * are served with, and public/shared/, the script and styles both use, which each page serves below its
 * own path (`/approvals/shared/`, `/ag-ui/shared/`) under its own policy.
 */
import path from 'node:path';
import express, { type RequestHandler, type Router } from 'express';
import { projectRoot } from '../paths';

/** At the project's root, beside package.json: `npm start` (dist/) and the Docker image serve them as they are. */
export const PAGES = path.join(projectRoot, 'public');

/**
 * A page's files: its own files only, no inline script but those of `inlineScriptHashes` (CSP sources,
 * `sha256-…`), no inline style, nothing from elsewhere, never in a frame; never sniffed, no Referer.
 */
export function pageHeaders(inlineScriptHashes: string[] = []): RequestHandler {
  const policy = [
    "default-src 'self'",
    ...(inlineScriptHashes.length
      ? [["script-src 'self'", ...inlineScriptHashes.map((hash) => `'${hash}'`)].join(' ')]
      : []),
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');
  return (_req, res, next) => {
    res.set({
      'content-security-policy': policy,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    });
    next();
  };
}

/** Serves public/shared/ at `${pagePath}/shared/`. */
export function serveSharedFiles(router: Router, pagePath: string, headers: RequestHandler): void {
  router.use(
    `${pagePath}/shared`,
    headers,
    express.static(path.join(PAGES, 'shared'), { index: false, redirect: false }),
  );
}
