import type { Migration } from './migration';

/**
 * Scheduled messages (Letta's `agents.schedule`): what to send the agent, and when. Each is a Temporal
 * Schedule too (src/agent/schedules.ts), which fires them; these rows are what the API lists.
 */
export const scheduledMessages: Migration = {
  version: 19,
  name: 'scheduled messages',
  sql: `
    CREATE TABLE scheduled_messages (
      id text PRIMARY KEY,
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      -- The request as it came (messages, callback_url, include_return_message_types, max_steps).
      message jsonb NOT NULL,
      -- Its messages as the turn takes them.
      input jsonb NOT NULL,
      -- {type: 'one-time', scheduled_at} or {type: 'recurring', cron_expression}.
      schedule jsonb NOT NULL,
      schedule_id text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX scheduled_messages_agent ON scheduled_messages (agent_id, created_at, id);
  `,
};
