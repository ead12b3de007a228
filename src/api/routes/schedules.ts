/**
 * Letta's scheduled messages (`agents.schedule.*`): each a Temporal Schedule (src/agent/schedules.ts)
 * that queues its message as a turn of the agent at its time, or on its cron expression.
 */
import type { ApiContext } from '../context';
import { parseBody, parseQuery } from '../validation';
import { documentedRouter, type DocumentedRouter } from '../route-book';
import {
  ScheduleCreateResponseSchema,
  ScheduleCreateSchema,
  ScheduleDeleteResponseSchema,
  ScheduledMessageSchema,
  ScheduleListQuery,
  ScheduleListResponseSchema,
} from '../schemas/schedules';
import { contentText } from '../../memory/context';
import { checkWebhookUrl } from '../../agent/webhooks';
import {
  createScheduledMessage,
  deleteScheduledMessage,
  getScheduledMessage,
  listScheduledMessages,
} from '../../agent/schedules';

export function schedulesRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Schedules');

  router.post(
    '/v1/agents/:agentId/schedule',
    {
      summary: 'Schedule a message',
      description:
        'To be sent to the agent at a time (`scheduled_at`), or on a cron expression (`cron_expression`).',
      body: ScheduleCreateSchema,
      response: ScheduleCreateResponseSchema,
    },
    async (req, res) => {
      const body = parseBody(ScheduleCreateSchema, req);
      const { schedule, ...message } = body;
      if (message.callback_url)
        message.callback_url = checkWebhookUrl(message.callback_url, ctx.config.OUTBOUND_ALLOW_PRIVATE);
      const created = await createScheduledMessage(ctx, req.params.agentId, {
        message,
        input: body.messages.map((m) => ({
          role: m.role,
          text: contentText(m.content),
          name: m.name,
          otid: m.otid,
        })),
        schedule:
          'cron_expression' in schedule
            ? { type: 'recurring', cron_expression: schedule.cron_expression }
            : { type: 'one-time', scheduled_at: schedule.scheduled_at },
      });
      res.json(created);
    },
  );

  router.get(
    '/v1/agents/:agentId/schedule',
    { summary: 'List scheduled messages', query: ScheduleListQuery, response: ScheduleListResponseSchema },
    async (req, res) => {
      res.json(await listScheduledMessages(ctx, req.params.agentId, parseQuery(ScheduleListQuery, req)));
    },
  );

  router.get(
    '/v1/agents/:agentId/schedule/:scheduledMessageId',
    { summary: 'Retrieve a scheduled message', response: ScheduledMessageSchema },
    async (req, res) => {
      res.json(await getScheduledMessage(ctx, req.params.agentId, req.params.scheduledMessageId));
    },
  );

  router.delete(
    '/v1/agents/:agentId/schedule/:scheduledMessageId',
    { summary: 'Delete a scheduled message', response: ScheduleDeleteResponseSchema },
    async (req, res) => {
      res.json(await deleteScheduledMessage(ctx, req.params.agentId, req.params.scheduledMessageId));
    },
  );

  return router;
}
