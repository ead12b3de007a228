/**
 * How a sandboxed custom tool reaches this server's API as its agent, as Letta's injected `client`
 * does: the API's URL as each kind of sandbox sees it, and a scoped access token per call
 * (src/agent/access-tokens.ts) that names the calling agent alone and is revoked when the call ends.
 */
import type { Queryable } from '../db';
import { createAccessToken, revokeToken, type AgentAccess } from '../agent/access-tokens';
import type { SandboxType } from '../schemas/sandbox-config';
import { BRIDGED_API_PORT } from '../sandbox/types';

/**
 * A call may read and edit its agent and read its messages. Not send it messages: the new turn would
 * wait behind the turn that waits for this call, so a message to its own agent from inside its turn is
 * refused (403), as the agent-to-agent tools refuse waiting on themselves.
 */
const CALL_ACCESS: AgentAccess[] = ['read_agent', 'write_agent', 'read_messages'];

/** Where a sandbox's client reaches the API: `url` from inside it; `socket`, the host's end of its bridge. */
export interface ApiRoute {
  url: string;
  /** For a local sandbox without a network: bind this socket in and bridge BRIDGED_API_URL to it. */
  socket?: string;
}

const BRIDGED_API_URL = `http://127.0.0.1:${BRIDGED_API_PORT}`;

export interface ToolApiAccess {
  /**
   * How a sandbox of this type reaches the API (`network`: its config allows the host's network);
   * none when it cannot.
   */
  routeFor(type: SandboxType, network: boolean): ApiRoute | undefined;
  /** A token for the agent, living `ttlMs` at most; `revoke` ends it sooner. */
  grant(agentId: string, ttlMs: number): Promise<{ token: string; revoke(): Promise<void> }>;
}

export interface ToolApiUrls {
  /** LETTA_PUBLIC_URL: where every sandbox with a network reaches the API. */
  publicUrl?: string;
  /** This process's own API address, once it listens; none in a worker-only process. */
  localUrl(): string | undefined;
  /** This process's API socket, which takes tokens only; none in a worker-only process. */
  socket(): string | undefined;
  /** Local sandboxes have the host's network whatever their config says (SANDBOX_TYPE=local-unsafe). */
  localHasNetwork: boolean;
}

export function toolApiAccess(db: Queryable, urls: ToolApiUrls): ToolApiAccess {
  const at = (url: string | undefined) => (url ? { url } : undefined);
  return {
    routeFor(type, network) {
      if (type !== 'local') return at(urls.publicUrl);
      if (network || urls.localHasNetwork) return at(urls.publicUrl ?? urls.localUrl());
      const socket = urls.socket();
      return socket ? { url: BRIDGED_API_URL, socket } : undefined;
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
