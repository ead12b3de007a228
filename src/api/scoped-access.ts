/**
 * What a request made with a scoped access token (src/access/access-tokens.ts) may reach. The password
 * (or, without one, loopback) reaches everything; a token reaches only routes of the agents its policy
 * names, with the access it grants:
 *
 * - `/v1/agents/{agent_id}/…` needs `read_agent` / `write_agent` on that agent, or `read_messages` /
 *   `write_messages` under `/messages`; reads are GETs (and the POSTs a route declares as reads);
 * - `/v1/ag-ui/agents/{agent_id}/…` (AG-UI's runs) needs `write_messages` on that agent;
 * - `/v1/runs/{run_id}/…` and `/v1/conversations/{conversation_id}/…` need the messages access on the
 *   agent the run or conversation belongs to; one of another agent is answered as not found, so that a
 *   token learns nothing of what it may not see; their lists and creation, the messages access on the
 *   agent their `agent_id` names;
 * - every other route is refused with 403, and so is an agent route that reaches past its agent:
 *   attaching anything by its id (`…/attach/{id}`), or what its declaration marks `scopedTokens: false`.
 *
 * Every route goes through this check as it is registered (src/api/route-book.ts), so a route added
 * later is closed to tokens until its path or declaration says otherwise.
 */
import type { RequestHandler, Response } from 'express';
import { verifyAccessToken, type AccessGrant, type AgentAccess } from '../access/access-tokens';
import type { Queryable } from '../db';
import { agentOfDefaultConversation, findRunScope, getConversation } from '../db/conversations';
import { callerMessageChain } from '../agent/agent-messages';
import { HttpError } from './errors';
import { getApprovalRecord, type Answerer } from '../db/approval-requests';

/** Who a request acts as: the server's own credential, or a scoped token with its resolvers. */
export type Principal =
  { kind: 'full'; open?: true } | { kind: 'token'; grant: AccessGrant; owners: ResourceOwners };

/** The agent a run or a conversation belongs to, if it exists. */
export interface ResourceOwners {
  run(id: string): Promise<string | undefined>;
  /** `default` takes the agent from the request (`agent_id`), as the conversation routes do. */
  conversation(id: string, agentOfDefault: unknown): Promise<string | undefined>;
  /** The agent whose turn an approval request paused. */
  approval(id: string): Promise<string | undefined>;
  /** The chain a sandboxed call's message continues (callerMessageChain); throws when refused. */
  messageChain(grant: AccessGrant, recipient: string, wait: boolean): Promise<Record<string, unknown>>;
}

export const FULL_ACCESS: Principal = { kind: 'full' };
/** Full access without a password: a server that asks none (loopback only). */
export const OPEN_ACCESS: Principal = { kind: 'full', open: true };

/** Who a request acts as, for an audit trail; `name` is what the caller says of itself (X-Letta-Approver). */
export function answererOf(res: Response): Answerer {
  const principal = principalOf(res);
  const said = res.req.get('x-letta-approver')?.trim().slice(0, 200);
  const name = said ? { name: said } : {};
  if (principal.kind === 'token')
    return { kind: 'token', id: principal.grant.id, via: principal.grant.hostname, ...name };
  return { kind: principal.open ? 'open_access' : 'password', ...name };
}

/** The principal of a presented access token, unless it is unknown, expired or revoked. */
export function tokenVerifier(db: Queryable, maxMessageDepth: number) {
  const owners: ResourceOwners = {
    run: async (id) => (await findRunScope(db, id))?.agentId,
    conversation: async (id, agentId) =>
      agentOfDefaultConversation(id, agentId) ?? (await getConversation(db, id))?.agent_id,
    approval: async (id) => (await getApprovalRecord(db, id))?.agent_id,
    messageChain: (grant, recipient, wait) =>
      callerMessageChain(db, maxMessageDepth, grant.caller!, recipient, wait),
  };
  return async (token: string): Promise<Extract<Principal, { kind: 'token' }> | undefined> => {
    const grant = await verifyAccessToken(db, token);
    return grant && { kind: 'token', grant, owners };
  };
}

/** What a route's declaration says of scoped tokens. */
export interface ScopedTokenUse {
  /** false: never with a scoped token (the route reaches past the agent in its path). */
  scopedTokens?: false;
  /** A POST that only reads (a search, a stream's resumption): read access suffices. */
  readOnly?: true;
  /** A listing across agents that a token reaches, the handler keeping to the token's agents. */
  filtersByToken?: true;
  /** Creating an agent: open to a sandboxed call's token, which the agent it creates then belongs to. */
  callsCreateAgents?: true;
  /**
   * The query parameter naming the agent a route of runs or conversations acts on (their lists and
   * creation, `agent_id`): a token reaches the route when it names one of its agents.
   */
  agentQuery?: string;
}

type Owner = { param: string; kind: 'agent' | 'run' | 'conversation' | 'approval'; inQuery?: true };

const COLLECTIONS = {
  agents: 'agent',
  runs: 'run',
  conversations: 'conversation',
  approvals: 'approval',
} as const;

const NOT_FOUND_NAMES = { run: 'Run', conversation: 'Conversation', approval: 'Approval request' } as const;

/** The access a token needs on a route, and where the agent comes from; none: tokens are refused. */
export function tokenAccess(
  method: string,
  path: string,
  use: ScopedTokenUse = {},
): { owner: Owner; needs: AgentAccess } | undefined {
  if (use.scopedTokens === false) return undefined;
  const reads = method === 'get' || use.readOnly === true;
  if (use.agentQuery)
    return {
      owner: { param: use.agentQuery, kind: 'agent', inQuery: true },
      needs: reads ? 'read_messages' : 'write_messages',
    };
  // An agent's AG-UI routes are its messages (a run, a thread's cancel).
  const agUi = /^\/v1\/ag-ui\/agents\/:(\w+)(\/.*)?$/.exec(path);
  if (agUi)
    return { owner: { param: agUi[1], kind: 'agent' }, needs: reads ? 'read_messages' : 'write_messages' };
  const [, collection, param, rest = ''] =
    /^\/v1\/(agents|runs|conversations|approvals)\/:(\w+)(\/.*)?$/.exec(path) ?? [];
  if (!collection) return undefined;
  // Attaching a block, tool, folder, archive or identity by its id reaches past the agent.
  if (/\/attach\/:/.test(rest)) return undefined;
  const kind = COLLECTIONS[collection as keyof typeof COLLECTIONS];
  const onMessages = kind !== 'agent' || /^\/messages(\/|$)/.test(rest);
  const needs = `${reads ? 'read' : 'write'}_${onMessages ? 'messages' : 'agent'}` as AgentAccess;
  return { owner: { param, kind }, needs };
}

/** The check a route's handlers run behind (src/api/route-book.ts). */
export function scopedAccess(method: string, path: string, use?: ScopedTokenUse): RequestHandler {
  const access = tokenAccess(method, path, use);
  const waits = !path.endsWith('/async');
  return (req, res, next) => {
    const principal = principalOf(res);
    if (principal.kind === 'full') return next();
    if (use?.callsCreateAgents && principal.grant.caller) return next();
    if (use?.filtersByToken) return next();
    if (!access) throw new HttpError(403, 'This route is not open to scoped access tokens');
    const { owner, needs } = access;
    const id = String((owner.inQuery ? req.query : req.params)[owner.param] ?? '');
    if (owner.inQuery && !id)
      throw new HttpError(
        403,
        `A scoped access token reaches this route with ${owner.param} naming one of its agents`,
      );
    const agentOfDefault = req.query.agent_id ?? (req.body as { agent_id?: unknown } | undefined)?.agent_id;
    const agentId =
      owner.kind === 'agent' ? Promise.resolve(id) : ownerOf(principal, owner.kind, id, agentOfDefault);
    agentId
      .then(async (agentId) => {
        if (!agentId || !principal.grant.allows(agentId, needs)) {
          if (needs === 'write_messages' && agentId && agentId === principal.grant.caller?.agentId)
            throw new HttpError(
              403,
              "A tool cannot message its own agent: the message would wait behind the turn that waits for the tool's call",
            );
          if (owner.kind === 'agent')
            throw new HttpError(403, `This access token does not grant ${needs} on agent ${id}`);
          // Another agent's run or conversation is answered as one that does not exist.
          throw new HttpError(404, `${NOT_FOUND_NAMES[owner.kind]} ${id} not found`);
        }
        // A sandboxed call's message continues its turn's chain of agents, as its tools' messages do.
        if (needs === 'write_messages' && principal.grant.caller)
          res.locals.turnChain = await principal.owners.messageChain(principal.grant, agentId, waits);
        next();
      })
      .catch(next);
  };
}

/**
 * What a scoped token may not put in an agent it creates or edits: existing blocks by id (another
 * agent's memory, as attaching one is) and tags beyond `tags` (tags decide which agents a sandboxed
 * call's token reaches, so a token could otherwise widen its own reach).
 */
export function checkTokenAgentBody(
  res: Response,
  body: { block_ids?: string[] | null; tags?: string[] | null },
  tags: readonly string[],
): void {
  if (principalOf(res).kind === 'full') return;
  if (body.block_ids?.length)
    throw new HttpError(403, 'A scoped access token cannot attach existing blocks by id');
  const added = (body.tags ?? []).filter((tag) => !tags.includes(tag));
  if (added.length)
    throw new HttpError(
      403,
      `A scoped access token cannot give an agent tags it does not have (${added.join(', ')}): tags decide which agents sandboxed calls reach`,
    );
}

/** What a sandboxed call's message adds to the metadata of the turn it starts (scopedAccess). */
export const turnChainOf = (res: Response): Record<string, unknown> | undefined =>
  res.locals.turnChain as Record<string, unknown> | undefined;

const ownerOf = (
  principal: Extract<Principal, { kind: 'token' }>,
  kind: 'run' | 'conversation' | 'approval',
  id: string,
  agentOfDefault: unknown,
) =>
  kind === 'conversation' ? principal.owners.conversation(id, agentOfDefault) : principal.owners[kind](id);

/**
 * The principal the access check set (src/api/access.ts). Only the routes mounted before that check,
 * health and the API reference, which are open to all, are reached without one.
 */
export const principalOf = (res: Response): Principal => (res.locals.principal as Principal) ?? FULL_ACCESS;
