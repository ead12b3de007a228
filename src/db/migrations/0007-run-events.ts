import type { Migration } from './migration';

/**
 * Whoever follows a run (the API answering `messages.create`) hears of its new messages and of its stop
 * at once, on the channel `letta_run_events` with the run id as payload, instead of polling for them.
 * Triggers, so that every writer (any worker process) notifies; a notification goes out on commit.
 */
export const runEvents: Migration = {
  version: 7,
  name: 'run events',
  sql: `
    CREATE FUNCTION notify_run_stop() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('letta_run_events', NEW.id);
      RETURN NULL;
    END
    $$;

    CREATE FUNCTION notify_run_message() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('letta_run_events', NEW.run_id);
      RETURN NULL;
    END
    $$;

    CREATE TRIGGER runs_run_event AFTER UPDATE ON runs
      FOR EACH ROW WHEN (NEW.completed_at IS DISTINCT FROM OLD.completed_at) EXECUTE FUNCTION notify_run_stop();

    CREATE TRIGGER messages_run_event AFTER INSERT ON messages
      FOR EACH ROW WHEN (NEW.run_id IS NOT NULL) EXECUTE FUNCTION notify_run_message();
  `,
};
