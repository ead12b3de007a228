import type { Database } from '../src/db';
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
  /** Starts the delivery of a run's completion callback (src/agent/webhooks.ts), once it has ended. */
  startRunCallback: (runId: string) => Promise<void>;
  /** The file tools' limits (unset: Letta's). */
  files?: FileToolSettings;
}
