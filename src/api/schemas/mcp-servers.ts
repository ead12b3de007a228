import { z } from 'zod';
import { idOf } from './common';
import { McpOauthConfigSchema } from '../../schemas/mcp-server';

export const McpServerParams = z.object({ mcpServerId: idOf('mcp_server') });
export const McpToolParams = McpServerParams.extend({ toolId: idOf('tool') });
export const RefreshQuery = z.object({ agent_id: idOf('agent').optional() });
/** An answer to an MCP server's elicitation (an extension of Letta's): accept with content, decline, cancel. */
export const ElicitationResponseSchema = z
  .object({
    action: z.enum(['accept', 'decline', 'cancel']).optional(),
    content: z.record(z.string(), z.unknown()).nullish(),
  })
  .meta({ id: 'ElicitationResponse' });

export const McpToolRunSchema = z.object({
  args: z.record(z.string(), z.unknown()).default({}),
  /**
   * An extension: how elicitations during the run are answered, the run having no one to ask
   * (`{"action": "accept"}` accepts the requested schema's defaults). Without it they are declined.
   */
  elicitation_response: ElicitationResponseSchema.nullish(),
});

/** Ours: whose authorization of an OAuth-protected server to start; none: the server's own. */
export const McpOauthAuthorizeSchema = z.object({ identity_id: idOf('identity').nullish() });

/** An OAuth-protected server's state: tokens or not, and where a user authorizes a pending authorization. */
export const McpOauthStatusSchema = z.object({
  authorized: z.boolean(),
  authorization_url: z.string().nullable(),
});

/**
 * Ours: how connecting to the server with its config last went. Servers are stored first and
 * connected to when used: `pending` (not tried with this config), `connected` (its tools listed), or
 * `failed` (`last_error` says why).
 */
export const McpConnectionSchema = z
  .object({
    status: z.enum(['pending', 'connected', 'failed']),
    last_error: z.string().nullable(),
    last_tried_at: z.string().nullable(),
  })
  .meta({ id: 'MCPServerConnection' });

const StringMap = z.record(z.string(), z.string());
const ServerFields = {
  id: z.string(),
  server_name: z.string(),
  connection: McpConnectionSchema,
  /** Ours: the longest one call of its tools may take, unless the tool sets its own. */
  tool_timeout_seconds: z.number().nullish(),
  /** Ours: whether its tools' calls run again after an interrupted attempt; unset: their annotations say. */
  tools_idempotent: z.boolean().nullish(),
};
const HttpFields = {
  server_url: z.string(),
  auth_header: z.string().nullish(),
  /** Masked: its last four characters at most. */
  auth_token: z.string().nullish(),
  /** Their values masked. */
  custom_headers: StringMap.nullish(),
  /** Its client_secret, private_key_pem, assertion and idp_client_secret masked. */
  oauth: McpOauthConfigSchema.nullish(),
  oauth_status: McpOauthStatusSchema.optional(),
};

/** Letta's flat MCP server shapes: id, name and the config's fields, credentials masked (mcpServerShape). */
export const StdioMcpServerSchema = z
  .object({
    ...ServerFields,
    mcp_server_type: z.literal('stdio'),
    command: z.string(),
    args: z.array(z.string()),
    /** Its values masked. */
    env: StringMap.nullish(),
  })
  .meta({ id: 'StdioMCPServer' });
export const SseMcpServerSchema = z
  .object({ ...ServerFields, mcp_server_type: z.literal('sse'), ...HttpFields })
  .meta({ id: 'SSEMCPServer' });
export const StreamableHttpMcpServerSchema = z
  .object({ ...ServerFields, mcp_server_type: z.literal('streamable_http'), ...HttpFields })
  .meta({ id: 'StreamableHTTPMCPServer' });

export const McpServerSchema = z
  .discriminatedUnion('mcp_server_type', [
    StdioMcpServerSchema,
    SseMcpServerSchema,
    StreamableHttpMcpServerSchema,
  ])
  .meta({ id: 'MCPServer' });
export type McpServer = z.infer<typeof McpServerSchema>;

/** What refreshing a server's tools changed (src/mcp/tool-sync.ts's SyncSummary): tool names. */
export const McpToolSyncSchema = z
  .object({
    added: z.array(z.string()),
    updated: z.array(z.string()),
    deleted: z.array(z.string()),
    /** Tools the server lists that cannot become tools here, with why. */
    skipped: z.array(z.object({ name: z.string(), reason: z.string() })),
  })
  .meta({ id: 'MCPToolSyncResult' });
