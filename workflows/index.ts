// The workflows the `agent` worker runs. Workflow code is deterministic and bundled by the worker:
// it imports no Node APIs and reaches activities only through proxyActivities.
import type { Workflows } from '../contracts/workflows';
import { agentMessageCall } from './agent-message-call';
import { agentSession } from './agent-session';
import { agentTurn } from './agent-turn';
import { fileIngestion } from './file-ingestion';
import { webhookDelivery } from './webhook-delivery';
import { scheduledMessage } from './scheduled-message';

export { agentSession, agentTurn, agentMessageCall, fileIngestion, webhookDelivery, scheduledMessage };

/**
 * The type name turns had before they were called turns: workflows started under it (a pause waits for
 * weeks) and the sessions that start them go on with this code (workflows/agent-session.ts).
 */
export { agentTurn as agentStep };

/** Each workflow has the signature the API starts it by (contracts/workflows.ts), or this fails to compile. */
export type AgentWorkflows = Implements<{
  agentSession: typeof agentSession;
  agentTurn: typeof agentTurn;
  agentMessageCall: typeof agentMessageCall;
  fileIngestion: typeof fileIngestion;
  webhookDelivery: typeof webhookDelivery;
  scheduledMessage: typeof scheduledMessage;
}>;
type Implements<T extends Workflows> = T;
