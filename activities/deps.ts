import type { Database } from '../src/db';
import type { Logger } from '../src/logger';
import type { ModelProvider } from '../src/llm/types';
import type { FetchWebpageLimits } from '../src/tools/builtin/fetch-webpage';

/** What every activity module is built from: the process's database, model clients and limits. */
export interface ActivityDeps {
  db: Database;
  providers: (provider: string) => ModelProvider;
  log: Logger;
  fetchLimits: FetchWebpageLimits;
}
