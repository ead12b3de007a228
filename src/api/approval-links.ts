/**
 * Where an approval notice's signed links lead (src/approvals/links.ts): outside the password,
 * since the link is the credential. GET shows what the link would do, and never does it (link previews
 * and mail scanners open links); POST does it once: a form's button in a browser, or a bot's POST
 * (`{"reason": "…"}` for a denial) that gets JSON.
 */
import express, { type Request, type Response, type NextFunction } from 'express';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from './route-book';
import { z } from 'zod';
import type { ApiContext } from './context';
import { verifyLink, type LinkClaims } from '../approvals/links';
import { webhookSecret } from '../agent/webhooks';
import { answerApprovalRequest } from '../agent/turns';
import type { ApprovalAnswer } from '../approvals/answering';
import { conflict, DomainError } from '../errors';
import { getApprovalRecord, stillWaits, useApprovalLink, type ApprovalRecord } from '../db/approval-requests';
import { getAgentRow } from '../db/agents';

const HEADERS = {
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const STATUS = { invalid: 400, not_found: 404, conflict: 409 } as const;

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const page = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
pre{background:#f4f4f4;padding:.5rem;overflow:auto}button{font-size:1rem;padding:.5rem 1rem}
textarea{width:100%}label{display:block;margin:.5rem 0 .25rem}</style></head>
<body><main><h1>${escape(title)}</h1>${body}</main></body></html>`;

/** The decision a link makes, for every call of its request. */
const answersOf = (
  record: ApprovalRecord,
  claims: LinkClaims,
  reason: string | undefined,
): ApprovalAnswer[] =>
  record.calls.map((call) => ({
    type: 'approval',
    tool_call_id: call.tool_call_id,
    approve: claims.decision === 'approve',
    reason: claims.decision === 'deny' ? (reason ?? null) : null,
  }));

export function approvalLinkRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Approval page', { public: true });
  const on = routeTable(router, approvalLinkContext(ctx));
  on.get('/approvals/act/:token', openSignedApprovalLinkDoc, openSignedApprovalLink);
  on.post(
    '/approvals/act/:token',
    actOnSignedApprovalLinkDoc,
    express.urlencoded({ extended: false, limit: '16kb' }),
    express.json({ limit: '16kb' }),
    actOnSignedApprovalLink,
  );
  return router;
}

/** What the routes of approvalLinkRouter share. */
function approvalLinkContext(ctx: ApiContext) {
  const wantsJson = (req: Request) => !req.is('application/x-www-form-urlencoded');
  const reply = (req: Request, res: Response, status: number, title: string, detail: string, json = {}) => {
    res.set(HEADERS).status(status);
    if (wantsJson(req) && req.method === 'POST') res.json({ detail, ...json });
    else res.type('html').send(page(title, `<p>${escape(detail)}</p>`));
  };

  /** The link's claims and its pause, or an answer saying why there are none. */
  const open = async (req: Request, res: Response) => {
    const secret = await webhookSecret(ctx.db, ctx.config.WEBHOOK_SECRET);
    const claims = verifyLink(secret, String(req.params.token));
    if (!claims) return void reply(req, res, 410, 'Link not valid', 'This link has expired or is not valid.');
    const record = await getApprovalRecord(ctx.db, claims.request);
    const waiting = record && (await stillWaits(ctx.db, record.request_message_id));
    if (!record || !waiting)
      return void reply(req, res, 409, 'Already answered', 'This request was answered or has ended.');
    return { claims, record };
  };
  return { ctx, wantsJson, reply, open };
}

type ApprovalLinkContext = ReturnType<typeof approvalLinkContext>;

const openSignedApprovalLinkDoc: RouteDoc = {
  summary: 'Open a signed approval link',
  description:
    'Shows what the link of an approval notice would do (approve or deny every call of its request), with a button that does it. Needs no password: the signed link is the credential.',
  mediaType: 'text/html',
  errors: [409, 410],
};

async function openSignedApprovalLink(
  { ctx, open }: ApprovalLinkContext,
  req: Request<{ token: string }>,
  res: Response,
  next: NextFunction,
) {
  try {
    const opened = await open(req, res);
    if (!opened) return;
    const { claims, record } = opened;
    const agent = await getAgentRow(ctx.db, record.agent_id);
    const verb = claims.decision === 'approve' ? 'Approve' : 'Deny';
    const calls = record.calls
      .map((c) => `<h2>${escape(c.tool_name)}</h2><pre>${escape(c.arguments)}</pre>`)
      .join('');
    const reason =
      claims.decision === 'deny'
        ? '<label for="reason">Reason (the agent reads it)</label><textarea id="reason" name="reason" rows="3"></textarea>'
        : '';
    const form = `<form method="post">${reason}<p><button type="submit">${verb} ${record.calls.length === 1 ? 'this call' : `all ${record.calls.length} calls`}</button></p></form>`;
    res
      .set(HEADERS)
      .type('html')
      .send(page(`${verb}: ${agent?.name ?? record.agent_id} waits`, `${calls}${form}`));
  } catch (error) {
    next(error);
  }
}

const actOnSignedApprovalLinkDoc: RouteDoc = {
  summary: 'Act on a signed approval link',
  description:
    'Approves or denies, as the link says, every call of its request, once; a denial takes `reason` (a form field, or JSON). JSON in, JSON out; a form gets a page.',
  body: z.object({ reason: z.string().optional() }),
  errors: [400, 404, 409, 410, 422],
};

async function actOnSignedApprovalLink(
  { ctx, open, reply }: ApprovalLinkContext,
  req: Request<{ token: string }>,
  res: Response,
  next: NextFunction,
) {
  try {
    const opened = await open(req, res);
    if (!opened) return;
    const { claims, record } = opened;
    const reason =
      typeof req.body?.reason === 'string' && req.body.reason.trim() ? req.body.reason.trim() : undefined;
    const { run } = await answerApprovalRequest(ctx, record, {
      answers: answersOf(record, claims, reason),
      answeredBy: { kind: 'signed_link', id: claims.id, ...(claims.via ? { via: claims.via } : {}) },
      // Used in the answer's transaction: a link is spent exactly when its answer is recorded.
      within: async (tx) => {
        if (!(await useApprovalLink(tx, claims.id))) throw conflict('This link has been used already.');
      },
    });
    const done = claims.decision === 'approve' ? 'Approved' : 'Denied';
    reply(req, res, 200, done, `${done}. The agent goes on.`, {
      approval_request_id: record.request_message_id,
      run_id: run.id,
    });
  } catch (error) {
    if (error instanceof DomainError)
      return reply(req, res, STATUS[error.kind], 'Not answered', error.message);
    next(error);
  }
}
