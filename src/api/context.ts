import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Database } from '../db';
import type { Logger } from '../logger';

/** What route handlers work with. */
export interface ApiContext {
  db: Database;
  config: Config;
  temporal: Client;
  /** The `agent` task queue, where agent-step workflows run. */
  agentTaskQueue: string;
  log: Logger;
}
