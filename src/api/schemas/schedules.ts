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
