// The workflows the `agent` worker runs. Workflow code is deterministic and bundled by the worker:
// it imports no Node APIs and reaches activities only through proxyActivities.
import type { Workflows } from '../contracts/workflows';
import { agentSession } from './agent-session';
import { agentStep } from './agent-step';
import { fileIngestion } from './file-ingestion';
import { webhookDelivery } from './webhook-delivery';
import { scheduledMessage } from './scheduled-message';

export { agentSession, agentStep, fileIngestion, webhookDelivery, scheduledMessage };

/** Each workflow has the signature the API starts it by (contracts/workflows.ts), or this fails to compile. */
export type AgentWorkflows = Implements<{
  agentSession: typeof agentSession;
  agentStep: typeof agentStep;
  fileIngestion: typeof fileIngestion;
  webhookDelivery: typeof webhookDelivery;
  scheduledMessage: typeof scheduledMessage;
}>;
type Implements<T extends Workflows> = T;
