import { z } from 'zod';
import { MessageCreateSchema } from './messages';

/** Letta's ScheduleCreateParams: the messages to send, and when. */
export const ScheduleCreateSchema = z
  .object({
    messages: z.array(MessageCreateSchema).min(1).max(100),
    schedule: z.union([
      z.object({
        type: z.literal('one-time').optional(),
        /** Unix time in milliseconds, as Letta's docs make it (`Date.now() + …`). */
        scheduled_at: z.number(),
      }),
      z.object({ type: z.literal('recurring'), cron_expression: z.string().min(1).max(200) }),
    ]),
    callback_url: z.string().max(2048).nullish(),
    include_return_message_types: z.array(z.string()).nullish(),
    max_steps: z.number().int().min(1).max(1000).nullish(),
  })
  .loose();
export type ScheduleCreate = z.infer<typeof ScheduleCreateSchema>;

/** Letta's ScheduleListParams: its `limit` comes as a string. */
export const ScheduleListQuery = z.object({
  after: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(50),
});

/** What creating a scheduled message answers: its id, and its first time (none when it will not fire). */
export const ScheduleCreateResponseSchema = z
  .object({ id: z.string(), next_scheduled_at: z.string().optional() })
  .meta({ id: 'ScheduleCreateResponse' });

/** Letta's ScheduledMessage: the request as it came (without its schedule), and when it fires. */
export const ScheduledMessageSchema = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    message: ScheduleCreateSchema.omit({ schedule: true }),
    /** Its next firing (ISO 8601), or null when it will fire no more. */
    next_scheduled_time: z.string().nullable(),
    schedule: z.discriminatedUnion('type', [
      /** Unix time in milliseconds. */
      z.object({ type: z.literal('one-time'), scheduled_at: z.number() }),
      z.object({ type: z.literal('recurring'), cron_expression: z.string() }),
    ]),
  })
  .meta({ id: 'ScheduledMessage' });

export const ScheduleListResponseSchema = z
  .object({ scheduled_messages: z.array(ScheduledMessageSchema), has_next_page: z.boolean() })
  .meta({ id: 'ScheduleListResponse' });

export const ScheduleDeleteResponseSchema = z
  .object({ success: z.literal(true) })
  .meta({ id: 'ScheduleDeleteResponse' });
