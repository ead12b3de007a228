/**
 * What the API shows of a server's credentials, and how an update applies to its config. A secret is
 * shown masked (its last four characters at most); a masked value sent back in an update keeps the
 * stored secret, so a client may PATCH with what it read.
 */
import type { McpServerConfig, McpServerUpdate } from '../schemas/mcp-server';
import { invalid } from '../errors';
import { maskSecret, maskValues, unmaskSecret, unmaskValues } from '../masking';

export function maskedConfig(config: McpServerConfig): McpServerConfig {
  if (config.mcp_server_type === 'stdio') return { ...config, env: maskValues(config.env) };
  return {
    ...config,
    auth_token: config.auth_token && maskSecret(config.auth_token),
    custom_headers: maskValues(config.custom_headers),
    oauth: config.oauth && {
      ...config.oauth,
      client_secret: config.oauth.client_secret && maskSecret(config.oauth.client_secret),
      private_key_pem: config.oauth.private_key_pem && maskSecret(config.oauth.private_key_pem),
      assertion: config.oauth.assertion && maskSecret(config.oauth.assertion),
      idp_client_secret: config.oauth.idp_client_secret && maskSecret(config.oauth.idp_client_secret),
    },
  };
}

/** The config after an update: fields given (not null) replace the stored ones; the type cannot change. */
export function updatedConfig(stored: McpServerConfig, update: McpServerUpdate['config']): McpServerConfig {
  if (update.mcp_server_type && update.mcp_server_type !== stored.mcp_server_type) {
    throw invalid(
      `The server's type is ${stored.mcp_server_type}: delete it and register it again to change its type`,
    );
  }
  const tool_timeout_seconds = update.tool_timeout_seconds ?? stored.tool_timeout_seconds;
  const tools_idempotent = update.tools_idempotent ?? stored.tools_idempotent;
  if (stored.mcp_server_type === 'stdio') {
    return {
      ...stored,
      tool_timeout_seconds,
      tools_idempotent,
      command: update.command ?? stored.command,
      args: update.args ?? stored.args,
      env: update.env ? unmaskValues(update.env, stored.env) : stored.env,
    };
  }
  return {
    ...stored,
    tool_timeout_seconds,
    tools_idempotent,
    server_url: update.server_url ?? stored.server_url,
    auth_header: update.auth_header ?? stored.auth_header,
    auth_token: update.auth_token ? unmaskSecret(update.auth_token, stored.auth_token) : stored.auth_token,
    custom_headers: update.custom_headers
      ? unmaskValues(update.custom_headers, stored.custom_headers)
      : stored.custom_headers,
    oauth: update.oauth
      ? {
          ...update.oauth,
          client_secret:
            update.oauth.client_secret &&
            unmaskSecret(update.oauth.client_secret, stored.oauth?.client_secret),
          private_key_pem:
            update.oauth.private_key_pem &&
            unmaskSecret(update.oauth.private_key_pem, stored.oauth?.private_key_pem),
          assertion: update.oauth.assertion && unmaskSecret(update.oauth.assertion, stored.oauth?.assertion),
          idp_client_secret:
            update.oauth.idp_client_secret &&
            unmaskSecret(update.oauth.idp_client_secret, stored.oauth?.idp_client_secret),
        }
      : stored.oauth,
  };
}
