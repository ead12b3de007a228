/**
 * Who may reach the API, checked before any route runs:
 *
 * 1. the Host header must name this server (a loopback name or address, the address it binds, or one
 *    of ALLOWED_HOSTS), so a web page cannot reach a loopback server through DNS rebinding;
 * 2. a browser's Origin, when sent, must be the server's own or one of CORS_ORIGINS, so a page of
 *    another site cannot make the user's browser send it requests (a form's POST needs no CORS grant);
 * 3. with a password, the request must carry it, as Letta's secure mode takes it:
 *    `Authorization: Bearer <password>` (the official clients' `apiKey`) or
 *    `X-BARE-PASSWORD: password <password>`; or, with or without a password, a scoped access token
 *    as its bearer (`lct-…`), which then reaches only what its policy grants (src/api/scoped-access.ts).
 *    On the API's socket (`tokensOnly`), only such a token counts.
 *    Failures are counted per address, and an address past the limit is refused for the rest of the
 *    window, right credential or not.
 *
 * `GET /v1/health/` is mounted before these: load balancers and orchestrators probe it by address,
 * without credentials, and it tells nothing but up or down.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import net from 'node:net';
import cors from 'cors';
import type { Request, RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import { sendError } from './errors';
import { FULL_ACCESS, OPEN_ACCESS, type Principal } from './scoped-access';
import { isAccessToken } from '../access/access-tokens';
import { isWildcardHost } from '../net/hosts';

export interface AccessOptions {
  /** Unset: no password asked (the API then listens on loopback only). */
  password?: string;
  /** The principal of a scoped access token, unless it is unknown, expired or revoked. */
  verifyToken: (token: string) => Promise<Extract<Principal, { kind: 'token' }> | undefined>;
  /** The address the API listens on; a specific one is an allowed Host too. */
  bindHost: string;
  /** Host names besides loopback ones; `*` allows any, `.example.com` a domain and its subdomains. */
  allowedHosts: string[];
  /** Origins (`https://app.example.com`) that browsers may send requests from, and read answers. */
  corsOrigins: string[];
  /** Failed password checks per address and window before the address is refused. */
  failureLimit: number;
  failureWindowMs: number;
}

const LOOPBACK = new net.BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
LOOPBACK.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

/** `localhost`, a `.localhost` name (RFC 6761: never resolved beyond this host), or a loopback address. */
export function isLoopbackHost(host: string): boolean {
  const name = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  const family = net.isIP(name);
  return family !== 0 && LOOPBACK.check(name, family === 4 ? 'ipv4' : 'ipv6');
}

/** The host name of a Host header (`name`, `name:port`, `[v6]:port`), lower-cased, without the port. */
function hostName(header: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(header);
  if (bracketed) return bracketed[1].toLowerCase();
  return header.replace(/:\d+$/, '').toLowerCase();
}

function hostAllowed(options: AccessOptions): (host: string) => boolean {
  const listed = options.allowedHosts.map((h) => h.toLowerCase());
  if (!isWildcardHost(options.bindHost)) listed.push(hostName(options.bindHost));
  return (host) =>
    isLoopbackHost(host) ||
    listed.some(
      (entry) => entry === '*' || entry === host || (entry.startsWith('.') && `.${host}`.endsWith(entry)),
    );
}

function hostCheck(options: AccessOptions): RequestHandler {
  const allowed = hostAllowed(options);
  return (req, res, next) => {
    const host = req.headers.host;
    if (host && allowed(hostName(host))) return next();
    sendError(
      res,
      403,
      `Host '${host ?? ''}' is not allowed: list the names clients use to reach this server in ALLOWED_HOSTS`,
    );
  };
}

/** Same origin (the page was served by this server under the name the request uses) or a listed one. */
function originCheck(options: AccessOptions): RequestHandler {
  const listed = new Set(options.corsOrigins);
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (origin === undefined || listed.has(origin) || isSameOrigin(req, origin)) return next();
    sendError(
      res,
      403,
      `Origin '${origin}' is not allowed: list the origins of trusted web apps in CORS_ORIGINS`,
    );
  };
}

function isSameOrigin(req: Request, origin: string): boolean {
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

/** The credential of an `Authorization: Bearer …` header. */
export const bearerOf = (req: http.IncomingMessage) =>
  /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];

const TOKENS_ONLY = Symbol('tokensOnly');
type TokensOnlyMark = { [TOKENS_ONLY]?: true };

/**
 * The API as its socket serves it to sandboxes (src/server.ts): a request there counts only with a
 * scoped access token, never the password, and is refused without one even where the API asks none.
 */
export function tokensOnly(app: http.RequestListener): http.RequestListener {
  return (req, res) => {
    (req as TokensOnlyMark)[TOKENS_ONLY] = true;
    app(req, res);
  };
}

/** SHA-256 first, so that the comparison takes the same time whatever the lengths. */
const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * Sets the request's principal (`res.locals.principal`): full access for the password, or without
 * one; a token's grant for a scoped access token, which a browser may send only from the app it was
 * made for. Anything else is a 401.
 */
function credentialCheck(options: AccessOptions): RequestHandler {
  const expected = options.password === undefined ? undefined : digest(options.password);
  const matches = (given: string | undefined) =>
    expected !== undefined && given !== undefined && timingSafeEqual(digest(given), expected);
  const presented = (req: Request) => {
    const bearer = bearerOf(req);
    const bare = /^password (.+)$/.exec(String(req.headers['x-bare-password'] ?? ''))?.[1];
    return { bearer, bare };
  };
  const keyOf = (req: Request) => ipKeyGenerator(req.ip ?? '');
  // Only failures reach the limiter, so long-lived streams and busy clients never count against it.
  const failures = rateLimit({
    windowMs: options.failureWindowMs,
    limit: options.failureLimit,
    keyGenerator: keyOf,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    handler: (_req, res) => refuseAddress(res, options.failureWindowMs),
  });
  const principalOf = async (req: Request): Promise<Principal | undefined> => {
    const { bearer, bare } = presented(req);
    const tokensOnly = (req as TokensOnlyMark)[TOKENS_ONLY] === true;
    if (!tokensOnly && (matches(bearer) || matches(bare))) return FULL_ACCESS;
    if (bearer && isAccessToken(bearer)) {
      const principal = await options.verifyToken(bearer);
      const origin = req.headers.origin;
      if (principal && origin !== undefined && origin !== originOf(principal.grant.hostname))
        return undefined;
      return principal;
    }
    return expected === undefined && !tokensOnly ? OPEN_ACCESS : undefined;
  };
  return async (req, res, next) => {
    const blocked = await failures.getKey(keyOf(req));
    if (blocked && blocked.totalHits >= options.failureLimit)
      return refuseAddress(res, options.failureWindowMs);
    const principal = await principalOf(req);
    if (principal) {
      res.locals.principal = principal;
      return next();
    }
    res.setHeader('www-authenticate', 'Bearer');
    await failures(req, res, () => sendError(res, 401, 'Unauthorized'));
  };
}

const originOf = (hostname: string) => {
  try {
    return new URL(hostname).origin;
  } catch {
    return hostname;
  }
};

const refuseAddress = (res: Parameters<RequestHandler>[1], windowMs: number) =>
  sendError(
    res,
    429,
    `Too many failed password attempts from this address: try again within ${Math.ceil(windowMs / 1000)} s`,
  );

/** The checks every route but health goes through, in order. */
export function accessControl(options: AccessOptions): RequestHandler[] {
  return [hostCheck(options), originCheck(options), credentialCheck(options)];
}

/** Grants listed origins (only) the right to read answers and send Letta's headers; answers preflights. */
export function corsGrant(options: Pick<AccessOptions, 'corsOrigins'>): RequestHandler {
  const listed = new Set(options.corsOrigins);
  return cors({ origin: (origin, grant) => grant(null, origin !== undefined && listed.has(origin)) });
}
