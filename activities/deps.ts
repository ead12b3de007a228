import type { Database } from '../src/db';
import type { ConversationRef } from '../src/db/conversations';
import type { WebhookSubject } from '../contracts/payloads';
import type { Logger } from '../src/logger';
import type { ModelProvider } from '../src/llm/types';
import type { WebSettings } from '../src/tools/builtin';
import type { FileToolSettings } from '../src/tools/builtin/files';

/** What every activity module is built from: the process's database, model clients and limits. */
export interface ActivityDeps {
  db: Database;
  providers: (provider: string) => ModelProvider;
  log: Logger;
  /** Where and how far the web tools may go. */
  web: WebSettings;
  /** Starts the delivery of a webhook (src/agent/webhooks.ts): a run's callback, an approval notice. */
  startWebhook: (subject: WebhookSubject) => Promise<void>;
  /** Tells a conversation's session that the turn it waited for gave the lane back (src/db/lanes.ts). */
  laneReleased: (scope: ConversationRef) => Promise<void>;
  /** The file tools' limits (unset: Letta's). */
  files?: FileToolSettings;
  /** The largest image a client tool's return gives the model (TOOL_RETURN_IMAGE_MAX_BYTES). */
  imageMaxBytes?: number;
  /** Transcript messages the model calls keep between steps (MODEL_TRANSCRIPT_CACHE_MESSAGES; none unset). */
  transcriptCacheMessages?: number;
}

/** The run's callback: its delivery is a workflow of its own, started once however often this runs. */
export const startRunCallback = (
  startWebhook: ActivityDeps['startWebhook'],
  run: { runId: string; agentId: string },
) => startWebhook({ kind: 'run_callback', id: run.runId, agentId: run.agentId });
