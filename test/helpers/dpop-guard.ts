/**
 * DPoP (RFC 9449) on the test OAuth-protected MCP server (oauth-mcp-server.ts), checked with jose: its
 * token endpoint demands a proof and binds each token it issues to the proof's key (token_type DPoP);
 * its MCP endpoint demands `Authorization: DPoP <token>` with a fresh proof of that same key whose
 * `ath` is the token's hash. With `nonce`, both first answer a proof without their nonce (each its own)
 * with `use_dpop_nonce` (§8 and §9). What it saw is in `record`.
 */
import crypto from 'node:crypto';
import type { RequestHandler } from 'express';
import { calculateJwkThumbprint, EmbeddedJWK, jwtVerify } from 'jose';

export interface DpopOptions {
  /** Whether a proof must carry the server's nonce. */
  nonce?: boolean;
}

export interface DpopRecord {
  /** The key thumbprint each issued token is bound to, in order. */
  boundKeys: string[];
  /** The `use_dpop_nonce` challenges made by the token endpoint and by the MCP endpoint. */
  nonceChallenges: { token: number; mcp: number };
  /** Why each refused proof was refused. */
  refused: string[];
}

type Checked = { jkt: string; nonceMissing: boolean } | { error: string };

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('base64url');

export function dpopGuard(
  options: DpopOptions,
  tokenUrl: string,
  mcpUrl: string,
  resourceMetadataUrl: string,
) {
  const newNonce = () => (options.nonce ? crypto.randomBytes(12).toString('base64url') : undefined);
  const nonces = { token: newNonce(), mcp: newNonce() };
  const jtis = new Set<string>();
  const bound = new Map<string, string>();
  const record: DpopRecord = { boundKeys: [], nonceChallenges: { token: 0, mcp: 0 }, refused: [] };

  /** The proof checked for this request (and token), as RFC 9449 §4.3 says. */
  async function check(
    proof: string | undefined,
    url: string,
    nonce: string | undefined,
    accessToken?: string,
  ): Promise<Checked> {
    if (!proof) return { error: 'no DPoP proof' };
    try {
      const { payload, protectedHeader } = await jwtVerify(proof, EmbeddedJWK, {
        typ: 'dpop+jwt',
        algorithms: ['ES256'],
        maxTokenAge: '60s',
      });
      if (payload.htm !== 'POST' || payload.htu !== url)
        return { error: `htm/htu ${payload.htm} ${payload.htu}` };
      if (typeof payload.jti !== 'string' || jtis.has(payload.jti)) return { error: 'a jti used before' };
      jtis.add(payload.jti);
      if (accessToken !== undefined && payload.ath !== sha256(accessToken)) return { error: 'ath' };
      const jkt = await calculateJwkThumbprint(protectedHeader.jwk!);
      return { jkt, nonceMissing: nonce !== undefined && payload.nonce !== nonce };
    } catch (error) {
      return { error: (error as Error).message };
    }
  }

  const refuse = (error: string) => (record.refused.push(error), { error: 'invalid_dpop_proof' });

  /** Before the token handler: the proof checked, then the token it issues bound to the proof's key. */
  const tokenGuard: RequestHandler = async (req, res, next) => {
    const checked = await check(req.header('dpop'), tokenUrl, nonces.token);
    if ('error' in checked) return void res.status(400).json(refuse(checked.error));
    if (checked.nonceMissing) {
      record.nonceChallenges.token += 1;
      return void res.status(400).set('DPoP-Nonce', nonces.token).json({ error: 'use_dpop_nonce' });
    }
    const json = res.json.bind(res);
    res.json = (body: { access_token?: string }) => {
      if (!body.access_token) return json(body);
      bound.set(body.access_token, checked.jkt);
      record.boundKeys.push(checked.jkt);
      return json({ ...body, token_type: 'DPoP' });
    };
    next();
  };

  const challenge = (error?: string) =>
    `DPoP ${error ? `error="${error}", ` : ''}resource_metadata="${resourceMetadataUrl}"`;

  /** Before the MCP endpoint (in place of its bearer check): a bound token with a proof of its key. */
  const mcpGuard: RequestHandler = async (req, res, next) => {
    const token = /^DPoP (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token)
      return void res.status(401).set('WWW-Authenticate', challenge()).json({ error: 'invalid_token' });
    const checked = await check(req.header('dpop'), mcpUrl, nonces.mcp, token);
    if ('error' in checked || checked.jkt !== bound.get(token)) {
      const refused = refuse('error' in checked ? checked.error : 'a key the token is not bound to');
      return void res.status(401).set('WWW-Authenticate', challenge('invalid_dpop_proof')).json(refused);
    }
    if (checked.nonceMissing) {
      record.nonceChallenges.mcp += 1;
      res.status(401).set('WWW-Authenticate', challenge('use_dpop_nonce')).set('DPoP-Nonce', nonces.mcp);
      return void res.json({ error: 'use_dpop_nonce' });
    }
    next();
  };

  return { record, tokenGuard, mcpGuard };
}
