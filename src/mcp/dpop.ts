/**
 * DPoP (RFC 9449, MCP's SEP-1932) for OAuth-protected MCP servers whose authorization server offers
 * it: each server's client has one key pair, kept encrypted at rest (db/mcp-dpop-keys.ts) so tokens
 * bound to it outlive a restart. Token requests to such a server carry a proof of the key, and so does
 * every MCP request that presents a token bound to it (`Authorization: DPoP <token>`, the proof's
 * `ath` the token's hash). A server that asks for a nonce (`use_dpop_nonce`) gets the request again
 * with the nonce it gave, and later proofs to it carry that nonce.
 */
import crypto from 'node:crypto';
import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  SignJWT,
  type CryptoKey,
  type JWK,
} from 'jose';
import type { AuthorizationServerMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Database } from '../db/database';
import { getMcpDpopKey, keepMcpDpopKey } from '../db/mcp-dpop-keys';

/** The proofs' algorithm, the one DPoP servers commonly take; used where the server lists it. */
const DPOP_ALG = 'ES256';

export interface DpopKey {
  privateKey: CryptoKey;
  publicJwk: JWK;
  /** Its RFC 7638 thumbprint: what a token bound to it names (`cnf.jkt`). */
  thumbprint: string;
}

/** What a fetch with proofs asks of a server's OAuth client. */
export interface DpopBinding {
  /** The key to prove at this token endpoint, if it takes DPoP proofs. */
  tokenEndpointKey(url: URL): Promise<DpopKey> | undefined;
  /** The key an access token is bound to, if it is bound. */
  boundKey(accessToken: string): Promise<DpopKey> | undefined;
}

/**
 * The token endpoint of an authorization server that takes DPoP proofs signed with our algorithm
 * (`dpop_signing_alg_values_supported`, RFC 9449 §5.1), or none.
 */
export function dpopTokenEndpoint(metadata: AuthorizationServerMetadata | undefined): string | undefined {
  // OpenID Connect's metadata type has no DPoP field; the metadata as discovered keeps it.
  const { dpop_signing_alg_values_supported: algorithms } = { ...metadata } as Record<string, unknown>;
  return Array.isArray(algorithms) && algorithms.includes(DPOP_ALG) ? metadata?.token_endpoint : undefined;
}

/** Whether a token response is a DPoP-bound token (RFC 9449 §5: token_type DPoP). */
export const isDpopBound = (tokenType: string | undefined) => tokenType?.toLowerCase() === 'dpop';

async function newPrivateJwk(): Promise<JWK> {
  const { privateKey } = await generateKeyPair(DPOP_ALG, { extractable: true });
  return exportJWK(privateKey);
}

async function imported(privateJwk: JWK): Promise<DpopKey> {
  const { kty, crv, x, y } = privateJwk;
  const publicJwk = { kty, crv, x, y };
  return {
    privateKey: (await importJWK(privateJwk, DPOP_ALG)) as CryptoKey,
    publicJwk,
    thumbprint: await calculateJwkThumbprint(publicJwk),
  };
}

/**
 * This process's DPoP keys, each read (or made) once per server and kept: a server's key never changes
 * once made, so signing a request reads nothing. Also the last nonce each server gave.
 */
export class DpopKeys {
  private readonly keys = new Map<string, Promise<DpopKey>>();
  /**
   * By endpoint (a proof's `htu`), whichever registration talks to it: an authorization server and a
   * resource server may share an origin, not their nonces.
   */
  readonly nonces = new Map<string, string>();

  constructor(private readonly db: Database) {}

  of(serverId: string): Promise<DpopKey> {
    const known = this.keys.get(serverId);
    if (known) return known;
    const key = this.load(serverId);
    this.keys.set(serverId, key);
    // A key that could not be read is read again next time.
    key.catch(() => this.keys.delete(serverId));
    return key;
  }

  private async load(serverId: string): Promise<DpopKey> {
    const stored = await getMcpDpopKey(this.db, serverId);
    return imported(stored ?? (await keepMcpDpopKey(this.db, serverId, await newPrivateJwk())));
  }
}

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('base64url');

/** A request's URL as its proof names it (`htu`): without query or fragment. */
const htuOf = (url: URL) => `${url.origin}${url.pathname}`;

/** A fresh proof (RFC 9449 §4.2) for one request: its method, its URL without query or fragment. */
export function dpopProof(
  key: DpopKey,
  request: { method: string; url: URL; accessToken?: string; nonce?: string },
): Promise<string> {
  const { method, url, accessToken, nonce } = request;
  return new SignJWT({
    htm: method,
    htu: htuOf(url),
    jti: crypto.randomUUID(),
    ...(accessToken ? { ath: sha256(accessToken) } : {}),
    ...(nonce ? { nonce } : {}),
  })
    .setProtectedHeader({ alg: DPOP_ALG, typ: 'dpop+jwt', jwk: key.publicJwk })
    .setIssuedAt()
    .sign(key.privateKey);
}

/**
 * A `use_dpop_nonce` error: a resource server's 401 says it in WWW-Authenticate (RFC 9449 §9), an
 * authorization server's 400 in its JSON body (§8).
 */
async function asksForNonce(response: Response): Promise<boolean> {
  if (response.status === 401)
    return /error="?use_dpop_nonce/.test(response.headers.get('www-authenticate') ?? '');
  if (response.status !== 400) return false;
  const body = (await response
    .clone()
    .json()
    .catch(() => undefined)) as { error?: unknown } | undefined;
  return body?.error === 'use_dpop_nonce';
}

/**
 * `base` with proofs: on a token request to an endpoint that takes them, and on a request presenting
 * a bound token, whose `Bearer` (as the SDK's transports send every token) becomes `DPoP`. A request
 * answered with a new nonce and `use_dpop_nonce` is sent once more, with a fresh proof carrying it.
 */
export function dpopFetch(base: FetchLike, binding: DpopBinding, nonces: Map<string, string>): FetchLike {
  return async (input, init) => {
    const url = new URL(input);
    const method = (init?.method ?? 'GET').toUpperCase();
    const headers = new Headers(init?.headers);
    const token = /^Bearer (.+)$/i.exec(headers.get('authorization') ?? '')?.[1];
    const key = token
      ? binding.boundKey(token)
      : method === 'POST'
        ? binding.tokenEndpointKey(url)
        : undefined;
    if (!key) return base(input, init);
    if (token) headers.set('authorization', `DPoP ${token}`);
    const send = async () => {
      const nonce = nonces.get(htuOf(url));
      headers.set('dpop', await dpopProof(await key, { method, url, accessToken: token, nonce }));
      const response = await base(input, { ...init, headers });
      const given = response.headers.get('dpop-nonce');
      if (given) nonces.set(htuOf(url), given);
      return { response, again: !!given && given !== nonce && (await asksForNonce(response)) };
    };
    const first = await send();
    if (!first.again) return first.response;
    await first.response.body?.cancel();
    return (await send()).response;
  };
}
