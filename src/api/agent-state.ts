/** Agents as Letta's AgentState: the row and what it owns, and what goes with it (messages, approval, identities). */
import type { Queryable } from '../db';
import { getAgent } from '../db/agents';
import { identitiesOfAgent } from '../db/identities';
import { agentMessageIds } from '../db/messages';
import type { AgentRecord } from '../db/rows';
import { agentStateShape, ALL_RELATIONSHIPS, type AgentRelationship } from './letta-shapes';
import { pendingApprovalView } from './pending-approval';

export async function agentState(
  db: Queryable,
  agent: AgentRecord,
  include: ReadonlySet<AgentRelationship> = ALL_RELATIONSHIPS,
) {
  const [messageIds, pendingApproval, identities] = await Promise.all([
    agentMessageIds(db, agent.id),
    pendingApprovalView(db, agent.pending_approval),
    identitiesOfAgent(db, agent.id),
  ]);
  return agentStateShape(
    agent,
    { message_ids: messageIds, pending_approval: pendingApproval, identities },
    include,
  );
}

/** The states of a page of agents (those still there when read). */
export async function agentStates(
  db: Queryable,
  rows: { id: string }[],
  include?: ReadonlySet<AgentRelationship>,
) {
  const agents = await Promise.all(rows.map((row) => getAgent(db, row.id)));
  const found = agents.filter((agent): agent is AgentRecord => Boolean(agent));
  return Promise.all(found.map((agent) => agentState(db, agent, include)));
}
