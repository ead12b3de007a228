import type { Database } from '../src/db';
import type { Logger } from '../src/logger';
import type { ModelProvider } from '../src/llm/types';

/** What every activity module is built from: the process's database and model clients. */
export interface ActivityDeps {
  db: Database;
  providers: (provider: string) => ModelProvider;
  log: Logger;
}
