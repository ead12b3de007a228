/**
 * Enterprise-managed authorization (MCP's SEP-990, the Identity Assertion Authorization Grant): the
 * user's identity assertion (an ID token from the enterprise's IdP) is exchanged at the IdP for an
 * ID-JAG (RFC 8693 token exchange) naming the MCP server's authorization server and resource; the
 * client then presents the ID-JAG to that authorization server in the JWT-bearer grant (RFC 7523)
 * for an access token (oauth.ts).
 */
import { discoverAuthorizationServerMetadata } from '@modelcontextprotocol/sdk/client/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { z } from 'zod';

const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
const ID_JAG_TYPE = 'urn:ietf:params:oauth:token-type:id-jag';

const ExchangeAnswer = z.object({
  access_token: z.string().min(1),
  issued_token_type: z.literal(ID_JAG_TYPE),
});

export interface IdJagRequest {
  /** The IdP: its issuer (its token endpoint discovered) or its token endpoint. */
  idpIssuer?: string | null;
  idpTokenEndpoint?: string | null;
  /** This client at the IdP, and its secret, if it has one (sent as HTTP Basic). */
  idpClientId: string;
  idpClientSecret?: string | null;
  /** The user's ID token from the IdP. */
  idToken: string;
  /** The authorization server the ID-JAG is for (its issuer), and the MCP server's resource. */
  audience: string;
  resource: string;
  scope?: string;
}

async function tokenEndpointOf(request: IdJagRequest, fetchFn: FetchLike): Promise<string> {
  if (request.idpTokenEndpoint) return request.idpTokenEndpoint;
  if (!request.idpIssuer) throw new Error('enterprise-managed authorization needs oauth.idp_issuer');
  const metadata = await discoverAuthorizationServerMetadata(request.idpIssuer, { fetchFn });
  if (!metadata) throw new Error(`the IdP ${request.idpIssuer} publishes no metadata`);
  return metadata.token_endpoint;
}

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

function parsedOrNone(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The ID-JAG the IdP issues for the user's ID token (RFC 8693 §2.1, as SEP-990 profiles it). */
export async function requestIdJag(request: IdJagRequest, fetchFn: FetchLike): Promise<string> {
  const { idpClientId, idpClientSecret, idToken, audience, resource, scope } = request;
  const endpoint = await tokenEndpointOf(request, fetchFn);
  const body = new URLSearchParams({
    grant_type: TOKEN_EXCHANGE_GRANT,
    requested_token_type: ID_JAG_TYPE,
    subject_token: idToken,
    subject_token_type: ID_TOKEN_TYPE,
    audience,
    resource,
    ...(scope ? { scope } : {}),
    ...(idpClientSecret ? {} : { client_id: idpClientId }),
  });
  const headers = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
    ...(idpClientSecret ? { authorization: basic(idpClientId, idpClientSecret) } : {}),
  };
  const response = await fetchFn(endpoint, { method: 'POST', headers, body });
  const text = await response.text();
  if (!response.ok) throw new Error(`the IdP refused the token exchange (${response.status}): ${text}`);
  const answer = ExchangeAnswer.safeParse(parsedOrNone(text));
  if (!answer.success) throw new Error('the IdP answered the token exchange with no ID-JAG');
  return answer.data.access_token;
}
