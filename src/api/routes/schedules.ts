import type { Request, Response } from 'express';
/**
 * Letta's scheduled messages (`agents.schedule.*`): each a Temporal Schedule (src/agent/schedules.ts)
 * that queues its message as a turn of the agent at its time, or on its cron expression.
 */
import type { ApiContext } from '../context';
import { parseBody, parseQuery } from '../validation';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
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
  const on = routeTable(router, ctx);
  on.post('/v1/agents/:agentId/schedule', scheduleMessageDoc, scheduleMessage);
  on.get('/v1/agents/:agentId/schedule', listScheduledMessagesRouteDoc, listScheduledMessagesRoute);
  on.get(
    '/v1/agents/:agentId/schedule/:scheduledMessageId',
    retrieveScheduledMessageDoc,
    retrieveScheduledMessage,
  );
  on.delete(
    '/v1/agents/:agentId/schedule/:scheduledMessageId',
    deleteScheduledMessageRouteDoc,
    deleteScheduledMessageRoute,
  );

  return router;
}

const scheduleMessageDoc: RouteDoc = {
  summary: 'Schedule a message',
  description:
    'To be sent to the agent at a time (`scheduled_at`), or on a cron expression (`cron_expression`).',
  body: ScheduleCreateSchema,
  response: ScheduleCreateResponseSchema,
};

async function scheduleMessage(ctx: ApiContext, req: Request<{ agentId: string }>, res: Response) {
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
}

const listScheduledMessagesRouteDoc: RouteDoc = {
  summary: 'List scheduled messages',
  query: ScheduleListQuery,
  response: ScheduleListResponseSchema,
};

async function listScheduledMessagesRoute(ctx: ApiContext, req: Request<{ agentId: string }>, res: Response) {
  res.json(await listScheduledMessages(ctx, req.params.agentId, parseQuery(ScheduleListQuery, req)));
}

const retrieveScheduledMessageDoc: RouteDoc = {
  summary: 'Retrieve a scheduled message',
  response: ScheduledMessageSchema,
};

async function retrieveScheduledMessage(
  ctx: ApiContext,
  req: Request<{ agentId: string; scheduledMessageId: string }>,
  res: Response,
) {
  res.json(await getScheduledMessage(ctx, req.params.agentId, req.params.scheduledMessageId));
}

const deleteScheduledMessageRouteDoc: RouteDoc = {
  summary: 'Delete a scheduled message',
  response: ScheduleDeleteResponseSchema,
};

async function deleteScheduledMessageRoute(
  ctx: ApiContext,
  req: Request<{ agentId: string; scheduledMessageId: string }>,
  res: Response,
) {
  res.json(await deleteScheduledMessage(ctx, req.params.agentId, req.params.scheduledMessageId));
}
