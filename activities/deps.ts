import type { Database } from '../src/db';
import type { Logger } from '../src/logger';
import type { ModelProvider } from '../src/llm/types';
import type { OutboundPolicy } from '../src/net/safe-fetch';

/** What every activity module is built from: the process's database, model clients and limits. */
export interface ActivityDeps {
  db: Database;
  providers: (provider: string) => ModelProvider;
  log: Logger;
  /** Where and how far fetch_webpage may go. */
  fetchPolicy: OutboundPolicy;
}
