// The workflows the `agent` worker runs. Workflow code is deterministic and bundled by the worker:
// it imports no Node APIs and reaches activities only through proxyActivities.
export { agentSession } from './agent-session';
export { agentStep } from './agent-step';
export { fileIngestion } from './file-ingestion';
export { webhookDelivery } from './webhook-delivery';
export { scheduledMessage } from './scheduled-message';
