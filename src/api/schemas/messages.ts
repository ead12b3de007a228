import { z } from 'zod';
import { isoMoment, pageQuery, stringList } from './common';
import { ClientToolSchema } from '../../schemas/tools';
import { ElicitationResponseSchema } from './mcp-servers';
import {
  LettaMessageSchema,
  RunSchema,
  StopReasonSchema,
  ToolCallChunkSchema,
  UsageStatisticsSchema,
} from './responses';

const TextPart = z.object({ type: z.literal('text'), text: z.string() }).loose();
const Content = z.union([z.string(), z.array(z.union([TextPart, z.object({ type: z.string() }).loose()]))]);

export const MessageCreateSchema = z.object({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'system', 'assistant']),
  content: Content,
  name: z.string().nullish(),
  otid: z.string().nullish(),
  sender_id: z.string().nullish(),
});

/** A client's own execution of a pending tool call (ToolReturn): its return is used as it is. */
const ToolReturnSchema = z.object({
  type: z.literal('tool'),
  tool_call_id: z.string().min(1),
  tool_return: Content,
  status: z.enum(['success', 'error']),
  stdout: z.array(z.string()).nullish(),
  stderr: z.array(z.string()).nullish(),
});

/** Edited arguments: an object, or its JSON text as a tool call's arguments are. */
const EditedArguments = z.preprocess(
  (value) => {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return value;
    }
  },
  z.record(z.string(), z.unknown()),
);

/** A person's decision on a pending server tool call (ApprovalReturn). */
const ApprovalReturnSchema = z.object({
  type: z.literal('approval'),
  tool_call_id: z.string().min(1),
  approve: z.boolean(),
  reason: z.string().nullish(),
  arguments: EditedArguments.nullish().describe(
    "An extension: the arguments the approved call runs with instead of the model's (an object, or its JSON text), checked against the tool's parameters",
  ),
  elicitation_response: ElicitationResponseSchema.nullish().describe(
    'An extension: the answer to the call\'s MCP server\'s question (`elicitations` of the approval request). Approving accepts with `content` (checked against the requested schema; its defaults fill what it leaves out), denying declines, `action: "cancel"` cancels',
  ),
});

/** Answers to the calls of an approval request: decisions on server tools, and client tools' returns. */
export const ApprovalAnswersSchema = z.array(
  z.discriminatedUnion('type', [ApprovalReturnSchema, ToolReturnSchema]),
);

export const ApprovalCreateSchema = z
  .object({
    type: z.literal('approval'),
    approvals: ApprovalAnswersSchema.nullish(),
    // Letta's deprecated single-call form, migrated into `approvals`.
    approve: z.boolean().nullish(),
    approval_request_id: z.string().nullish(),
    reason: z.string().nullish(),
  })
  .loose();

export const ToolReturnCreateSchema = z
  .object({ type: z.literal('tool_return'), tool_returns: z.array(ToolReturnSchema).min(1) })
  .loose();

/** Letta's outer message union is not discriminated: `approve` / `approval_request_id` mean an approval. */
const InputMessage = z.preprocess(
  (value) =>
    value && typeof value === 'object' && !('type' in value)
      ? { ...value, type: 'approve' in value || 'approval_request_id' in value ? 'approval' : 'message' }
      : value,
  z.discriminatedUnion('type', [
    MessageCreateSchema.extend({ type: z.literal('message') }),
    ApprovalCreateSchema,
    ToolReturnCreateSchema,
  ]),
);

/** Letta's LettaRequest; a conversation's messages stream unless told not to, an agent's do not. */
const lettaRequest = (streamingByDefault: boolean) =>
  z
    .object({
      messages: z.array(InputMessage).min(1, 'Messages must not be empty').nullish(),
      input: Content.nullish(),
      max_steps: z.number().int().min(1).default(50),
      client_tools: z.array(ClientToolSchema).nullish(),
      streaming: z.boolean().default(streamingByDefault),
      stream_tokens: z.boolean().default(false),
      include_pings: z.boolean().default(true),
      background: z.boolean().default(false),
      include_return_message_types: z.array(z.string()).nullish(),
      /** Where the run is POSTed once it ends (`messages.createAsync`, scheduled messages). */
      callback_url: z.string().max(2048).nullish(),
      /** Beyond Letta: deny a pause of this request after this long (overrides the agent's setting). */
      approval_timeout_seconds: z.number().int().positive().nullish(),
    })
    .loose()
    .superRefine((body, ctx) => {
      const has = (v: unknown) => v !== undefined && v !== null;
      if (has(body.messages) === has(body.input)) {
        ctx.addIssue({
          code: 'custom',
          message: 'Exactly one of messages or input must be provided',
          path: ['messages'],
        });
      }
    });

export const LettaRequestSchema = lettaRequest(false);
export type LettaRequest = z.infer<typeof LettaRequestSchema>;

/** A conversation's messages: the agent's id comes in the body when the conversation is `default`. */
export const ConversationMessageSchema = z.intersection(
  lettaRequest(true),
  z.object({ agent_id: z.string().nullish() }),
);

export const AgentMessagesQuery = pageQuery(100, 'desc').extend({ conversation_id: z.string().optional() });

/** Every agent's messages (Letta's `GET /v1/messages/`). */
export const AllMessagesQuery = AgentMessagesQuery.extend({ include_return_message_types: stringList });

/** Letta's SearchAllMessagesRequest; the search is full-text whatever `search_mode` asks. */
export const SearchMessagesSchema = z.object({
  query: z.string(),
  agent_id: z.string().nullish(),
  conversation_id: z.string().nullish(),
  start_date: isoMoment.nullish(),
  end_date: isoMoment.nullish(),
  limit: z.number().int().min(1).max(1000).default(50),
  search_mode: z.enum(['vector', 'fts', 'hybrid']).nullish(),
});

export const CancelSchema = z.object({ run_ids: z.array(z.string()).nullish() }).loose();

/** Letta's RetrieveStreamRequest: where a dropped stream goes on from (poll_interval, batch_size: taken, unused). */
export const RetrieveStreamSchema = z
  .object({
    starting_after: z.number().int().min(0).default(0),
    include_pings: z.boolean().default(true),
    poll_interval: z.number().nullish(),
    batch_size: z.number().int().nullish(),
    agent_id: z.string().nullish(),
    run_id: z.string().nullish(),
    otid: z.string().nullish(),
  })
  .loose();

/** Letta's keepalive event of a stream (`include_pings`). */
export const LettaPingSchema = z
  .object({ id: z.string(), date: z.string(), message_type: z.literal('ping'), run_id: z.string() })
  .meta({ id: 'LettaPing' });

/** The `event: error` a stream sends after its stop reason when the run failed (instead of its usage). */
export const LettaErrorMessageSchema = z
  .object({
    message_type: z.literal('error_message'),
    run_id: z.string(),
    error_type: z.string(),
    message: z.string(),
  })
  .meta({ id: 'LettaErrorMessage' });

/**
 * One event of a stream: a message (or, with `stream_tokens`, a piece of one), a ping, then the stop
 * reason and the usage (or an error); the stream ends with `data: [DONE]`.
 */
export const LettaStreamingResponseSchema = z
  .union([
    LettaMessageSchema,
    ToolCallChunkSchema,
    LettaPingSchema,
    StopReasonSchema,
    UsageStatisticsSchema,
    LettaErrorMessageSchema,
  ])
  .meta({ id: 'LettaStreamingResponse' });

const searchResultFields = {
  message_id: z.string(),
  agent_id: z.string(),
  conversation_id: z.string().nullable(),
  created_at: z.string(),
};

/** A stored message's text part, as the message search lists it (messageSearchResults). */
export const LettaMessageSearchResultSchema = z
  .discriminatedUnion('message_type', [
    z.object({ ...searchResultFields, message_type: z.literal('system_message'), content: z.string() }),
    z.object({ ...searchResultFields, message_type: z.literal('user_message'), content: z.string() }),
    z.object({ ...searchResultFields, message_type: z.literal('reasoning_message'), reasoning: z.string() }),
    z.object({ ...searchResultFields, message_type: z.literal('assistant_message'), content: z.string() }),
  ])
  .meta({ id: 'LettaMessageSearchResult' });

/** What a cancel answers, once the runs have ended: each run's id with its status. */
export const CancelledRunsSchema = z.record(z.string(), RunSchema.shape.status);
