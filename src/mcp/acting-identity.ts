/**
 * The identity an agent's MCP call acts for, on a server whose OAuth tokens are kept per identity
 * (`oauth.per_identity`, src/mcp/oauth.ts): the agent's identity (Letta's `identity_ids`), which must
 * be exactly one, so a call never picks one of several users' tokens by chance.
 */
import type { Queryable } from '../db';
import { identitiesOfAgent } from '../db/identities';
import type { McpServerRow } from '../db/mcp-servers';
import { ToolError } from '../returns/tool-error';

/** Whether the server keeps its OAuth tokens per identity. */
export const authorizesPerIdentity = (server: McpServerRow) =>
  server.config.mcp_server_type !== 'stdio' && server.config.oauth?.per_identity === true;

/** The server as the agent's call reaches it: with the identity it acts for where tokens are per identity. */
export async function serverForAgent(
  db: Queryable,
  agentId: string,
  server: McpServerRow,
): Promise<McpServerRow & { identityId?: string }> {
  if (!authorizesPerIdentity(server)) return server;
  const identities = await identitiesOfAgent(db, agentId);
  if (identities.length !== 1)
    throw new ToolError(
      `MCP server '${server.server_name}' authorizes each identity separately: the agent needs exactly one identity to act for, and has ${identities.length}`,
    );
  return { ...server, identityId: identities[0]!.id };
}
