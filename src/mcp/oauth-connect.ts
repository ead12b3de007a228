/**
 * How a connection gets OAuth (oauth.ts): a server that uses it (its config's `oauth`, or OAuth state
 * stored) is connected to with its provider; any other without one, so its requests read nothing of
 * OAuth, until it answers 401: then OAuth starts, as the SDK's client does it (discovery from the
 * challenge's resource metadata, or the 2025-03-26 fallbacks).
 */
import { McpAuthError, type McpAuthProvider } from './connection';
import type { McpOauth, OauthServerRef } from './oauth';

/**
 * An identity that has not authorized a server whose tokens are kept per identity: the call cannot
 * be made with anyone else's. Its message names where the API answers the authorization URL (the URL
 * itself carries the flow's state, which stays out of tool returns and histories).
 */
export class McpAuthorizationRequiredError extends Error {
  override name = 'McpAuthorizationRequiredError';
}

/** Where the API starts (or answers) an identity's authorization of a server. */
export const authorizePath = (serverId: string) => `/v1/mcp-servers/${serverId}/oauth/authorize`;

function authorizationRequired(oauth: McpOauth, server: OauthServerRef): McpAuthorizationRequiredError {
  const url = new URL(authorizePath(server.id), oauth.settings.publicUrl).href;
  return new McpAuthorizationRequiredError(
    `identity ${server.identityId} has not authorized this MCP server yet: ` +
      `POST ${url} with {"identity_id": "${server.identityId}"} answers the authorization URL to visit, ` +
      'then call the tool again',
  );
}

/**
 * Runs `connect` with the provider the server needs, if any (see the module's comment); with
 * `oauthAsked`, the server refused a connection made without it: OAuth from the start.
 */
export async function connectWithOauth<T>(
  oauth: McpOauth | undefined,
  server: OauthServerRef,
  connect: (authProvider?: McpAuthProvider) => Promise<T>,
  oauthAsked = false,
): Promise<T> {
  if (!oauth) return connect();
  const connectWith = async (provider: NonNullable<ReturnType<McpOauth['providerFor']>>) => {
    try {
      return await connect(provider);
    } catch (error) {
      if (error instanceof McpAuthError && server.identityId && provider.authorizationUrl)
        throw authorizationRequired(oauth, server);
      throw error;
    }
  };
  const used = oauthAsked ? oauth.providerFor(server) : await oauth.providerIfUsed(server);
  if (used) return connectWith(used);
  try {
    return await connect();
  } catch (error) {
    const provider = error instanceof McpAuthError && oauth.providerFor(server);
    if (!provider) throw error;
    return connectWith(provider);
  }
}
