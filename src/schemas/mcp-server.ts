/**
 * Letta's MCP server configs (letta/schemas/mcp_server.py), discriminated by `mcp_server_type`: the one
 * source of their types, for the API, the database and the connections.
 */
import { z } from 'zod';

const StringMap = z.record(z.string(), z.string());

/** Ours (Letta has none): the longest one call of the server's tools may take, unless the tool sets its own. */
const toolTimeoutSeconds = z.number().positive().nullish();

/**
 * Ours: whether a call of the server's tools runs again after an attempt interrupted before it recorded
 * its result (true), or is answered that it may have run (false); unset, each tool's annotations say
 * (`idempotentHint`, `readOnlyHint`). A tool's own `metadata_.idempotent` overrules it.
 */
const toolsIdempotent = z.boolean().nullish();

export const StdioConfigSchema = z.object({
  mcp_server_type: z.literal('stdio'),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: StringMap.nullish(),
  tool_timeout_seconds: toolTimeoutSeconds,
  tools_idempotent: toolsIdempotent,
});

/**
 * How this server's client authorizes with an OAuth-protected MCP server (docs/using-it.md#oauth):
 * every field may be left out, for discovery, client ID metadata document or dynamic registration and
 * the authorization code flow. A pre-registered client gives its `client_id` (and `client_secret`,
 * `issuer`: the authorization server it was registered with); `client_credentials` asks for tokens
 * with them, with no user; `private_key_pem` (PKCS#8) authenticates the client with a JWT signed by it
 * (private_key_jwt, `signing_algorithm` RS256 unless given) instead of a secret. `jwt_bearer` asks for
 * tokens with a workload's JWT, `assertion` (RFC 7523's JWT-bearer grant, workload identity federation).
 * `id_jag` is enterprise-managed authorization (SEP-990): the user's ID token from the enterprise's IdP,
 * `assertion`, exchanged at the IdP (`idp_issuer` or `idp_token_endpoint`, as `idp_client_id` with
 * `idp_client_secret`) for an ID-JAG, which the JWT-bearer grant presents to the MCP server's
 * authorization server, as `client_id` and `client_secret`.
 * `per_identity` keeps tokens per identity: an agent's call acts with its identity's own (src/mcp/oauth.ts).
 */
export const McpOauthConfigSchema = z.object({
  grant_type: z.enum(['authorization_code', 'client_credentials', 'jwt_bearer', 'id_jag']).nullish(),
  client_id: z.string().min(1).nullish(),
  client_secret: z.string().min(1).nullish(),
  private_key_pem: z.string().min(1).nullish(),
  signing_algorithm: z
    .string()
    .regex(/^(RS|PS|ES)(256|384|512)$/, 'RS, PS or ES with 256, 384 or 512')
    .nullish(),
  assertion: z.string().min(1).nullish(),
  issuer: z.string().url().nullish(),
  scope: z.string().min(1).nullish(),
  client_metadata_url: z.string().url().nullish(),
  idp_issuer: z.string().url().nullish(),
  idp_token_endpoint: z.string().url().nullish(),
  idp_client_id: z.string().min(1).nullish(),
  idp_client_secret: z.string().min(1).nullish(),
  per_identity: z.boolean().nullish(),
});
export type McpOauthConfig = z.infer<typeof McpOauthConfigSchema>;

const httpFields = {
  server_url: z.string().url(),
  auth_header: z.string().min(1).nullish(),
  auth_token: z.string().nullish(),
  custom_headers: StringMap.nullish(),
  oauth: McpOauthConfigSchema.nullish(),
  tool_timeout_seconds: toolTimeoutSeconds,
  tools_idempotent: toolsIdempotent,
};
export const SseConfigSchema = z.object({ mcp_server_type: z.literal('sse'), ...httpFields });
export const StreamableHttpConfigSchema = z.object({
  mcp_server_type: z.literal('streamable_http'),
  ...httpFields,
});

export const McpServerConfigSchema = z.discriminatedUnion('mcp_server_type', [
  StdioConfigSchema,
  SseConfigSchema,
  StreamableHttpConfigSchema,
]);
export type McpServerConfig = z.infer<typeof McpServerConfigSchema>;
export type McpServerType = McpServerConfig['mcp_server_type'];

/** The fields that may hold credentials: stored encrypted, never returned in full. */
export const SECRET_FIELDS = ['env', 'auth_token', 'custom_headers', 'oauth'] as const;

/** A server name becomes the tag `mcp:<name>` of its tools and a part of log lines: kept plain. */
const ServerName = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, "_", "." and "-" only');

export const McpServerCreateSchema = z.object({ server_name: ServerName, config: McpServerConfigSchema });

/**
 * Letta's Update*McpServer: the type may be left out (it cannot change), and a field left out or null
 * keeps its value.
 */
export const McpServerUpdateSchema = z.object({
  server_name: ServerName.nullish(),
  config: z
    .object({
      mcp_server_type: z.enum(['stdio', 'sse', 'streamable_http']).optional(),
      command: z.string().min(1).nullish(),
      args: z.array(z.string()).nullish(),
      env: StringMap.nullish(),
      ...httpFields,
      server_url: httpFields.server_url.nullish(),
    })
    .default({}),
});
export type McpServerUpdate = z.infer<typeof McpServerUpdateSchema>;
