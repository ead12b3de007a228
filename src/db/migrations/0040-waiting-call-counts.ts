import type { Migration } from './migration';

/**
 * The calls waiting for an answer, counted as they come and go: every change that opens or closes a
 * waiting call (a call recorded under an unanswered request, a request answered, either deleted) adds
 * its delta, by kind, in its own transaction, so the metrics' gauge sums the deltas instead of
 * counting the waiting calls. Deltas are only inserted, so that pauses and answers never wait on each
 * other for a counter's row; every 256th is followed by a fold of the committed ones into one row per
 * kind, by the one transaction that holds the fold's lock (tried, never waited for), so the deltas
 * stay few.
 */
export const waitingCallCounts: Migration = {
  version: 40,
  name: 'waiting call counts',
  sql: `
    -- No pause or answer between the count of those waiting and the triggers that count the rest.
    LOCK TABLE approval_requests, approval_calls IN SHARE ROW EXCLUSIVE MODE;
    CREATE TABLE waiting_call_deltas (
      id bigserial PRIMARY KEY,
      kind text NOT NULL,
      delta bigint NOT NULL
    );
    INSERT INTO waiting_call_deltas (kind, delta)
    SELECT c.kind, count(*) FROM approval_requests r JOIN approval_calls c USING (request_message_id)
    WHERE r.answered_at IS NULL GROUP BY c.kind;

    CREATE FUNCTION add_waiting_call_delta(call_kind text, change bigint) RETURNS void
    LANGUAGE plpgsql AS $$
    DECLARE
      added bigint;
    BEGIN
      INSERT INTO waiting_call_deltas (kind, delta) VALUES (call_kind, change) RETURNING id INTO added;
      IF added % 256 = 0 AND pg_try_advisory_xact_lock(hashtext('waiting_call_deltas'), 0) THEN
        WITH folded AS (DELETE FROM waiting_call_deltas d RETURNING d.kind, d.delta)
        INSERT INTO waiting_call_deltas (kind, delta)
        SELECT folded.kind, sum(folded.delta) FROM folded GROUP BY folded.kind;
      END IF;
    END
    $$;

    CREATE FUNCTION count_waiting_call() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP <> 'INSERT' AND EXISTS (SELECT 1 FROM approval_requests
          WHERE request_message_id = OLD.request_message_id AND answered_at IS NULL) THEN
        PERFORM add_waiting_call_delta(OLD.kind, -1);
      END IF;
      IF TG_OP <> 'DELETE' AND EXISTS (SELECT 1 FROM approval_requests
          WHERE request_message_id = NEW.request_message_id AND answered_at IS NULL) THEN
        PERFORM add_waiting_call_delta(NEW.kind, 1);
      END IF;
      RETURN NULL;
    END
    $$;
    CREATE TRIGGER approval_calls_counted
      AFTER INSERT OR DELETE OR UPDATE OF kind, request_message_id ON approval_calls
      FOR EACH ROW EXECUTE FUNCTION count_waiting_call();

    -- A request's calls stop (or start again) waiting with it. Deleted, it takes its calls off before
    -- they go, which they then do uncounted: their request is gone.
    CREATE FUNCTION count_waiting_request() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      request approval_requests;
      sign integer;
      calls record;
    BEGIN
      IF TG_OP = 'DELETE' THEN request := OLD; sign := -1;
      ELSE request := NEW; sign := CASE WHEN NEW.answered_at IS NULL THEN 1 ELSE -1 END;
      END IF;
      FOR calls IN SELECT kind, count(*) AS n FROM approval_calls
          WHERE request_message_id = request.request_message_id GROUP BY kind ORDER BY kind LOOP
        PERFORM add_waiting_call_delta(calls.kind, sign * calls.n);
      END LOOP;
      IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
      RETURN NULL;
    END
    $$;
    CREATE TRIGGER approval_requests_answered_counted AFTER UPDATE OF answered_at ON approval_requests
      FOR EACH ROW WHEN ((OLD.answered_at IS NULL) <> (NEW.answered_at IS NULL))
      EXECUTE FUNCTION count_waiting_request();
    CREATE TRIGGER approval_requests_deleted_counted BEFORE DELETE ON approval_requests
      FOR EACH ROW WHEN (OLD.answered_at IS NULL)
      EXECUTE FUNCTION count_waiting_request();
  `,
};
