/**
 * An enterprise IdP for enterprise-managed authorization (SEP-990): it issues users' ID tokens (for
 * the test to hand over), and at its token endpoint exchanges one (RFC 8693) for an ID-JAG, a JWT of
 * type `oauth-id-jag+jwt` naming the audience and resource asked for, signed with its key. Its OpenID
 * metadata names that endpoint.
 */
import type http from 'node:http';
import crypto from 'node:crypto';
import express from 'express';
import { generateKeyPair, jwtVerify, SignJWT, type CryptoKey } from 'jose';
import { freePort } from './env';

export interface EnterpriseIdp {
  issuer: string;
  /** The key its ID-JAGs are signed with, for the authorization server to check them. */
  publicKey: CryptoKey;
  /** An ID token for this user, issued to the client `clientId`. */
  idToken(user: string, clientId: string): Promise<string>;
  /** Each token exchange's parameters, in order. */
  exchanges: Record<string, string>[];
  close(): Promise<void>;
}

/** `clientIdAtAs`: the client the ID-JAGs name, as the MCP server's authorization server knows it. */
export async function startEnterpriseIdp(clientIdAtAs: string): Promise<EnterpriseIdp> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const exchanges: Record<string, string>[] = [];
  const app = express();
  app.get('/.well-known/openid-configuration', (_req, res) => {
    res.json({
      issuer,
      token_endpoint: `${issuer}/token`,
      authorization_endpoint: `${issuer}/authorize`,
      response_types_supported: ['code'],
      jwks_uri: `${issuer}/jwks`,
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['ES256'],
      grant_types_supported: ['urn:ietf:params:oauth:grant-type:token-exchange'],
    });
  });
  app.post('/token', express.urlencoded({ extended: false }), async (req, res) => {
    const asked = req.body as Record<string, string>;
    exchanges.push(asked);
    const { payload } = await jwtVerify(asked.subject_token ?? '', publicKey, { issuer }).catch(() => ({
      payload: undefined,
    }));
    const wellFormed =
      asked.grant_type === 'urn:ietf:params:oauth:grant-type:token-exchange' &&
      asked.subject_token_type === 'urn:ietf:params:oauth:token-type:id_token' &&
      asked.requested_token_type === 'urn:ietf:params:oauth:token-type:id-jag' &&
      asked.audience &&
      asked.resource;
    if (!payload || !wellFormed) return void res.status(400).json({ error: 'invalid_request' });
    const idJag = await new SignJWT({ resource: asked.resource, client_id: clientIdAtAs })
      .setProtectedHeader({ alg: 'ES256', typ: 'oauth-id-jag+jwt' })
      .setIssuer(issuer)
      .setSubject(payload.sub!)
      .setAudience(asked.audience!)
      .setIssuedAt()
      .setExpirationTime('5m')
      .setJti(crypto.randomUUID())
      .sign(privateKey);
    res.json({
      access_token: idJag,
      issued_token_type: 'urn:ietf:params:oauth:token-type:id-jag',
      token_type: 'N_A',
    });
  });
  const listener: http.Server = await new Promise((resolve) => {
    const started = app.listen(port, '127.0.0.1', () => resolve(started));
  });
  return {
    issuer,
    publicKey,
    exchanges,
    idToken: (user, clientId) =>
      new SignJWT({ email: user })
        .setProtectedHeader({ alg: 'ES256' })
        .setIssuer(issuer)
        .setSubject(user)
        .setAudience(clientId)
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(privateKey),
    close: () =>
      new Promise((resolve) => {
        listener.closeAllConnections();
        listener.close(() => resolve());
      }),
  };
}
