/**
 * Versioned schema migrations, applied in order at start-up. Never edit one that has shipped:
 * add the next version instead.
 */
import type { Migration } from './migration';
import { initial } from './0001-initial';
import { agents } from './0002-agents';
import { approvals } from './0003-approvals';
import { toolVersions } from './0004-tool-versions';
import { sandboxConfigs } from './0005-sandbox-configs';
import { mcpServers } from './0006-mcp-servers';
import { runEvents } from './0007-run-events';
import { queuedInput } from './0008-queued-input';
import { conversations } from './0009-conversations';
import { toolCallPairing } from './0010-tool-call-pairing';
import { deploymentId } from './0011-deployment-id';
import { archivalMemory } from './0012-archival-memory';
import { identities } from './0013-identities';
import { toolSchemaOrder } from './0014-tool-schema-order';
import { folders } from './0015-folders';
import { agentFileLimits } from './0016-agent-file-limits';
import { fileChunks } from './0017-file-chunks';
import { runCallbacks } from './0018-run-callbacks';
import { scheduledMessages } from './0019-scheduled-messages';
import { lanes } from './0020-lanes';
import { runStopEvents } from './0021-run-stop-events';
import { toolCallClaims } from './0022-tool-call-claims';
import { accessTokens } from './0023-access-tokens';
import { callTokens } from './0024-call-tokens';
import { hiddenConversations } from './0025-hidden-conversations';
import { approvalRequests } from './0026-approval-requests';
import { mcpOauth } from './0027-mcp-oauth';
import { mcpElicitations } from './0028-mcp-elicitations';
import { mcpDpopKeys } from './0029-mcp-dpop-keys';
import { mcpOauthIdentities } from './0030-mcp-oauth-identities';
import { traceSpans } from './0031-trace-spans';
import { toolReturnParts } from './0032-tool-return-parts';
import { toolCallTakeovers } from './0033-tool-call-takeovers';
import { requestParts } from './0034-request-parts';
import { workerBuilds } from './0035-worker-builds';
import { mcpServerConnections } from './0036-mcp-server-connections';
import { agUiThreads } from './0037-ag-ui-threads';
import { waitingApprovalsOrder } from './0038-waiting-approvals-order';
import { approvalChanges } from './0039-approval-changes';
import { waitingCallCounts } from './0040-waiting-call-counts';
import { conversationMessages } from './0041-conversation-messages';

export const migrations: Migration[] = [
  initial,
  agents,
  approvals,
  toolVersions,
  sandboxConfigs,
  mcpServers,
  runEvents,
  queuedInput,
  conversations,
  toolCallPairing,
  deploymentId,
  archivalMemory,
  identities,
  toolSchemaOrder,
  folders,
  agentFileLimits,
  fileChunks,
  runCallbacks,
  scheduledMessages,
  lanes,
  runStopEvents,
  toolCallClaims,
  accessTokens,
  callTokens,
  hiddenConversations,
  approvalRequests,
  mcpOauth,
  mcpElicitations,
  mcpDpopKeys,
  mcpOauthIdentities,
  traceSpans,
  toolReturnParts,
  toolCallTakeovers,
  requestParts,
  workerBuilds,
  mcpServerConnections,
  agUiThreads,
  waitingApprovalsOrder,
  approvalChanges,
  waitingCallCounts,
  conversationMessages,
];
