import type { Migration } from './migration';

/**
 * Each approval request carries the transaction that last changed it (`changed_by`), so that the
 * approvals stream reads the requests changed since its last read, from an index, instead of every
 * waiting one. A pause stops waiting only by a write to its request: its answer, or the deletion of
 * its agent or conversation, which touches the request it waited on.
 */
export const approvalChanges: Migration = {
  version: 39,
  name: 'approval changes',
  sql: `
    ALTER TABLE approval_requests ADD COLUMN changed_by xid8 NOT NULL DEFAULT pg_current_xact_id();
    CREATE INDEX approval_requests_changes ON approval_requests (changed_by);

    CREATE FUNCTION mark_approval_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.changed_by := pg_current_xact_id();
      RETURN NEW;
    END
    $$;
    CREATE TRIGGER approval_requests_mark_change BEFORE UPDATE ON approval_requests
      FOR EACH ROW EXECUTE FUNCTION mark_approval_change();

    CREATE FUNCTION touch_pending_approval_request() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE approval_requests SET changed_by = pg_current_xact_id()
      WHERE request_message_id = OLD.pending_approval->>'message_id';
      RETURN NULL;
    END
    $$;
    CREATE TRIGGER agents_pending_approval_deleted AFTER DELETE ON agents
      FOR EACH ROW WHEN (OLD.pending_approval IS NOT NULL)
      EXECUTE FUNCTION touch_pending_approval_request();
    CREATE TRIGGER conversations_pending_approval_deleted AFTER DELETE ON conversations
      FOR EACH ROW WHEN (OLD.pending_approval IS NOT NULL)
      EXECUTE FUNCTION touch_pending_approval_request();
  `,
};
