/**
 * How a sandboxed custom tool reaches this server's API as its agent, as Letta's injected `client`
 * does: the API's URL as each kind of sandbox sees it, and a scoped access token per call
 * (src/access/access-tokens.ts) that names the calling agent and the agents it works with (callPolicy),
 * and is revoked when the call ends.
 */
import type { Queryable } from '../db';
import { ALL_ACCESS, mintAccessToken, revokeToken, type AgentAccess, type AgentGrant } from './access-tokens';
import { relatedAgents } from '../db/agents';
import type { SandboxType } from '../schemas/sandbox-config';
import { BRIDGED_API_PORT } from '../sandbox/types';

/**
 * A call may read and edit its agent and read its messages. Not send it messages: the new turn would
 * wait behind the turn that waits for this call, so a message to its own agent from inside its turn is
 * refused (403), as the agent-to-agent tools refuse waiting on themselves.
 */
const OWN_ACCESS: AgentAccess[] = ['read_agent', 'write_agent', 'read_messages'];
/** The agents sharing a tag with the caller, Letta's groups for agent-to-agent messages: read and message. */
const TAG_MATE_ACCESS: AgentAccess[] = ['read_agent', 'read_messages', 'write_messages'];

/** Where a sandboxed call's token was made from: its agent, and its turn's run when it has one. */
export interface ToolCaller {
  agentId: string;
  runId?: string;
}

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
  routeFor(type: SandboxType, network: boolean): Promise<ApiRoute | undefined>;
  /** A token for the caller, living `ttlMs` at most; `revoke` ends it sooner. */
  grant(caller: ToolCaller, ttlMs: number): Promise<{ token: string; revoke(): Promise<void> }>;
}

export interface ToolApiUrls {
  /** LETTA_PUBLIC_URL: where every sandbox with a network reaches the API. */
  publicUrl?: string;
  /** This process's own API address once it listens; none in a worker-only process. */
  localUrl: Promise<string | undefined>;
  /** The API's socket, which takes tokens only; none in a worker-only process without publicUrl. */
  socket?: string;
  /** Local sandboxes have the host's network whatever their config says (SANDBOX_TYPE=local-unsafe). */
  localHasNetwork: boolean;
}

/**
 * The policy of a call's token: its own agent, the agents it created (in full, as their owner), and
 * those sharing one of its tags (to read and message), `maxAgents` in all.
 */
async function callPolicy(db: Queryable, agentId: string, maxAgents: number): Promise<AgentGrant[]> {
  const related = await relatedAgents(db, agentId, maxAgents - 1);
  return [
    { type: 'agent', id: agentId, access: OWN_ACCESS },
    ...related.map(({ id, created }): AgentGrant => ({
      type: 'agent',
      id,
      access: created ? ALL_ACCESS : TAG_MATE_ACCESS,
    })),
  ];
}

export function toolApiAccess(db: Queryable, urls: ToolApiUrls, maxAgents: number): ToolApiAccess {
  const at = (url: string | undefined) => (url ? { url } : undefined);
  return {
    async routeFor(type, network) {
      if (type !== 'local') return at(urls.publicUrl);
      if (network || urls.localHasNetwork) return at(urls.publicUrl ?? (await urls.localUrl));
      return urls.socket ? { url: BRIDGED_API_URL, socket: urls.socket } : undefined;
    },
    async grant({ agentId, runId }, ttlMs) {
      const { token } = await mintAccessToken(db, {
        hostname: 'http://localhost',
        policy: await callPolicy(db, agentId, maxAgents),
        expiresAt: new Date(Date.now() + ttlMs),
        caller: { agent_id: agentId, run_id: runId ?? null },
      });
      return { token, revoke: () => revokeToken(db, token).catch(() => undefined) };
    },
  };
}
