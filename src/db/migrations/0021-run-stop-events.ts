import type { Migration } from './migration';

/**
 * A run's stop is announced a second time on `letta_run_events`, as `stop:<run id>`, so that a
 * follower waiting for the stop alone (a response without a stream) wakes for it, not at each message
 * of the run, and reads the run once instead of at every wake (src/api/run-events.ts). Servers of the
 * versions before find no follower under that payload and pass it by.
 */
export const runStopEvents: Migration = {
  version: 21,
  name: 'run stop events',
  sql: `
    CREATE OR REPLACE FUNCTION notify_run_stop() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('letta_run_events', NEW.id);
      PERFORM pg_notify('letta_run_events', 'stop:' || NEW.id);
      RETURN NULL;
    END
    $$;
  `,
};
