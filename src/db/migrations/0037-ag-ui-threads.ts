import type { Migration } from './migration';

/**
 * AG-UI's threads and runs (src/api/routes/ag-ui.ts). A thread is one of the agent's conversations,
 * made the first time a frontend names the thread. An AG-UI run is the run its request started or
 * answered: `run_id` is null while the request that claimed the AG-UI run id starts it, so the same
 * run id sent twice (a retry, a reconnect) joins that run rather than starting another.
 */
export const agUiThreads: Migration = {
  version: 37,
  name: 'AG-UI threads',
  sql: `
    CREATE TABLE ag_ui_threads (
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      thread_id text NOT NULL,
      conversation_id text NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (agent_id, thread_id)
    );
    CREATE TABLE ag_ui_runs (
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      thread_id text NOT NULL,
      ag_ui_run_id text NOT NULL,
      run_id text REFERENCES runs(id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (agent_id, thread_id, ag_ui_run_id)
    );
    -- A frontend's message ids are kept as otids: which of a request's messages are new is looked up by them.
    CREATE INDEX messages_otid ON messages (otid) WHERE otid IS NOT NULL;
  `,
};
