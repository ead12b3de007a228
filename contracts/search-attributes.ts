import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Custom search attributes every agent turn sets, so the Temporal Web UI can filter runs by agent,
 * run and outcome (e.g. `LettaAgentId = "agent-…" AND LettaStopReason = "requires_approval"`).
 * The server registers them at start-up (src/temporal/search-attributes.ts).
 */
export const agentIdKey = defineSearchAttributeKey('LettaAgentId', SearchAttributeType.KEYWORD);
export const runIdKey = defineSearchAttributeKey('LettaRunId', SearchAttributeType.KEYWORD);
export const stopReasonKey = defineSearchAttributeKey('LettaStopReason', SearchAttributeType.KEYWORD);

export const customSearchAttributes = [agentIdKey, runIdKey, stopReasonKey];
