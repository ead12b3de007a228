/**
 * How a sandboxed custom tool reaches this server's API as its agent, as Letta's injected `client`
 * does: the API's URL as each kind of sandbox sees it, and a scoped access token per call
 * (src/agent/access-tokens.ts) that names the calling agent alone and is revoked when the call ends.
 */
import type { Queryable } from '../db';
import { createAccessToken, revokeToken, type AgentAccess } from '../agent/access-tokens';
import type { SandboxType } from '../schemas/sandbox-config';

/**
 * A call may read and edit its agent and read its messages. Not send it messages: the new turn would
 * wait behind the turn that waits for this call, so a message to its own agent from inside its turn is
 * refused (403), as the agent-to-agent tools refuse waiting on themselves.
 */
const CALL_ACCESS: AgentAccess[] = ['read_agent', 'write_agent', 'read_messages'];

export interface ToolApiAccess {
  /**
   * The API's URL from a sandbox of this type (`network`: a local one with the host's network); none
   * when such a sandbox cannot reach it.
   */
  urlFor(type: SandboxType, network: boolean): string | undefined;
  /** A token for the agent, living `ttlMs` at most; `revoke` ends it sooner. */
  grant(agentId: string, ttlMs: number): Promise<{ token: string; revoke(): Promise<void> }>;
}

export interface ToolApiUrls {
  /** LETTA_PUBLIC_URL: where every sandbox with a network reaches the API. */
  publicUrl?: string;
  /** This process's own API address, once it listens; none in a worker-only process. */
  localUrl(): string | undefined;
}

export function toolApiAccess(db: Queryable, urls: ToolApiUrls): ToolApiAccess {
  return {
    urlFor(type, network) {
      if (type !== 'local') return urls.publicUrl;
      return network ? (urls.publicUrl ?? urls.localUrl()) : undefined;
    },
    async grant(agentId, ttlMs) {
      const { token } = await createAccessToken(
        db,
        {
          hostname: 'http://localhost',
          policy: [{ type: 'agent', id: agentId, access: CALL_ACCESS }],
          expiresAt: new Date(Date.now() + ttlMs),
        },
        { defaultTtlMs: ttlMs, maxTtlMs: ttlMs + 1_000 },
      );
      return { token, revoke: () => revokeToken(db, token).catch(() => undefined) };
    },
  };
}
