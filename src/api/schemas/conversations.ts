import { z } from 'zod';
import { idOf, pageQuery, queryBoolean } from './common';

const ModelHandle = z
  .string()
  .regex(/^[^/]+\/.+$/, 'The model handle should be in the format provider/model-name')
  .nullish();

export const CreateConversationQuery = z.object({ agent_id: z.string().min(1) });

export const CreateConversationSchema = z
  .object({
    summary: z.string().nullish(),
    model: ModelHandle,
    model_settings: z.record(z.string(), z.unknown()).nullish(),
    hidden: z.boolean().nullish(),
    isolated_block_labels: z
      .array(z.string())
      .max(0, 'isolated_block_labels: blocks of a conversation of its own are not supported yet')
      .nullish(),
  })
  .loose();

export const UpdateConversationSchema = z
  .object({
    summary: z.string().nullish(),
    model: ModelHandle,
    model_settings: z.record(z.string(), z.unknown()).nullish(),
    last_message_at: z.coerce.date().nullish(),
  })
  .loose();

export const ListConversationsQuery = pageQuery(50, 'desc').extend({
  agent_id: z.string().optional(),
  summary_search: z.string().optional(),
});

/** Routes that take `default` (the agent's own conversation) name the agent in the query. */
export const AgentOfDefaultQuery = z.object({ agent_id: z.string().optional() });

export const ConversationMessagesQuery = pageQuery(100, 'desc').extend(AgentOfDefaultQuery.shape);

/** Letta's fork: up to and including `message_id`, `hidden` from listings. */
export const ForkConversationQuery = AgentOfDefaultQuery.extend({
  hidden: queryBoolean,
  message_id: idOf('message').optional(),
});

/** What compacting a conversation answers (compactConversation). */
export const CompactionResponseSchema = z
  .object({
    summary: z.string(),
    num_messages_before: z.number().int(),
    num_messages_after: z.number().int(),
  })
  .meta({ id: 'CompactionResponse' });
