/**
 * Letta's response shapes, as this server sends them: the one source of their types (the shape
 * functions of src/api/letta-shapes.ts return these). Named with `meta({ id })` after Letta's schemas.
 */
import { z } from 'zod';
import { LlmConfigSchema } from '../../schemas/agents';
import { ToolRuleSchema } from '../../schemas/tool-rules';
import { TypedSandboxConfigSchema } from '../../schemas/sandbox-config';

const JsonObject = z.record(z.string(), z.unknown());
/** An ISO 8601 time; null where the row has none. */
const Time = z.string().nullable();

export const BlockSchema = z
  .object({
    id: z.string(),
    label: z.string(),
    value: z.string(),
    limit: z.number().int(),
    description: z.string().nullable(),
    read_only: z.boolean(),
    hidden: z.boolean().nullable(),
    metadata: JsonObject,
    tags: z.array(z.string()).nullable(),
    is_template: z.boolean(),
    created_at: Time,
    updated_at: Time,
  })
  .meta({ id: 'Block' });
export type Block = z.infer<typeof BlockSchema>;

export const ToolSchema = z
  .object({
    id: z.string(),
    tool_type: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    source_type: z.string().nullable(),
    source_code: z.string().nullable(),
    json_schema: JsonObject,
    args_json_schema: JsonObject.nullable(),
    tags: z.array(z.string()),
    return_char_limit: z.number().int(),
    pip_requirements: z.array(z.unknown()).nullable(),
    npm_requirements: z.array(z.unknown()).nullable(),
    default_requires_approval: z.boolean().nullable(),
    enable_parallel_execution: z.boolean(),
    metadata_: JsonObject,
    version: z.number().int(),
    /** Whether the schema is one a model can use (Letta's schema health check). */
    health: z.object({ status: z.string(), reasons: z.array(z.string()) }),
    created_at: Time,
    updated_at: Time,
  })
  .meta({ id: 'Tool' });
export type Tool = z.infer<typeof ToolSchema>;

export const ToolExecutionResultSchema = z
  .object({
    status: z.enum(['success', 'error']),
    func_return: z.unknown(),
    stdout: z.array(z.string()).nullable(),
    stderr: z.array(z.string()).nullable(),
    agent_state: z.null(),
    sandbox_config_fingerprint: z.null(),
  })
  .meta({ id: 'ToolExecutionResult' });
export type ToolExecutionResult = z.infer<typeof ToolExecutionResultSchema>;

const sandboxConfigRow = { id: z.string(), organization_id: z.null(), created_at: Time, updated_at: Time };

/** One object per type, not an intersection: the document's objects admit no property they do not name. */
export const SandboxConfigSchema = z
  .discriminatedUnion('type', [
    TypedSandboxConfigSchema.options[0].extend(sandboxConfigRow),
    TypedSandboxConfigSchema.options[1].extend(sandboxConfigRow),
    TypedSandboxConfigSchema.options[2].extend(sandboxConfigRow),
  ])
  .meta({ id: 'SandboxConfig' });
export type SandboxConfig = z.infer<typeof SandboxConfigSchema>;

export const SandboxEnvVarSchema = z
  .object({
    id: z.string(),
    key: z.string(),
    /** Masked: the plaintext never leaves the server. */
    value: z.string(),
    description: z.string().nullable(),
    sandbox_config_id: z.string(),
    organization_id: z.null(),
    created_at: Time,
    updated_at: Time,
  })
  .meta({ id: 'SandboxEnvironmentVariable' });
export type SandboxEnvVar = z.infer<typeof SandboxEnvVarSchema>;

export const AgentSecretSchema = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    key: z.string(),
    /** Masked. */
    value: z.string(),
    description: z.string().nullable(),
  })
  .meta({ id: 'AgentEnvironmentVariable' });

export const AgentStateSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    agent_type: z.string(),
    description: z.string().nullable(),
    system: z.string(),
    model: z.string().nullable(),
    llm_config: LlmConfigSchema,
    /** The llm_config's settings in Letta's model_settings shape. */
    model_settings: z.object({
      provider_type: z.string(),
      temperature: z.number().nullable(),
      max_output_tokens: z.number().nullable(),
      parallel_tool_calls: z.boolean(),
      strict: z.boolean(),
      reasoning: z.object({ reasoning_effort: z.string().nullable() }),
      /** Structured outputs are not offered: always null. */
      response_format: z.null(),
    }),
    /** The embedding model's handle (`provider/model`), from embedding_config. */
    embedding: z.string().nullable(),
    embedding_config: JsonObject.nullable(),
    blocks: z.array(BlockSchema),
    memory: z.object({
      agent_type: z.string(),
      blocks: z.array(BlockSchema),
      file_blocks: z.array(z.unknown()),
      prompt_template: z.null(),
    }),
    tools: z.array(ToolSchema),
    tool_rules: z.array(ToolRuleSchema),
    sources: z.array(z.unknown()),
    tags: z.array(z.string()),
    metadata: JsonObject.nullable(),
    secrets: z.array(AgentSecretSchema),
    tool_exec_environment_variables: z.array(AgentSecretSchema),
    identities: z.array(z.lazy(() => IdentitySchema)),
    identity_ids: z.array(z.string()),
    timezone: z.string(),
    last_stop_reason: z.string().nullable(),
    approval_timeout_seconds: z.number().nullable(),
    max_files_open: z.number().int(),
    per_file_view_window_char_limit: z.number().int(),
    message_ids: z.array(z.string()),
    pending_approval: z.unknown(),
    created_at: Time,
    updated_at: Time,
  })
  .meta({ id: 'AgentState' });
export type AgentState = z.infer<typeof AgentStateSchema>;

const messageFields = {
  id: z.string(),
  date: z.string(),
  name: z.string().nullable(),
  otid: z.string().nullable(),
  sender_id: z.string().nullable(),
  step_id: z.string().nullable(),
  is_err: z.boolean().nullable(),
  /** The message's place in its run's stream (streams only). */
  seq_id: z.number().int().nullable(),
  run_id: z.string().nullable(),
};

const ToolCallSchema = z.object({ name: z.string(), arguments: z.string(), tool_call_id: z.string() });

/** Letta's return parts: text, and images with their bytes inline (src/returns/return-parts.ts). */
const ReturnPartSchema = z.union([
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({
    type: z.literal('image'),
    source: z.object({ type: z.literal('base64'), media_type: z.string(), data: z.string() }),
  }),
]);

const ToolReturnSchema = z.object({
  type: z.literal('tool'),
  tool_return: z.union([z.string(), z.array(ReturnPartSchema)]),
  status: z.enum(['success', 'error']),
  tool_call_id: z.string(),
  stdout: z.array(z.string()).nullable(),
  stderr: z.array(z.string()).nullable(),
});

/** An MCP server's question during a tool call (an extension of Letta's approval request). */
export const ElicitationSchema = z
  .object({
    tool_call_id: z.string(),
    message: z.string().describe('what the server asks the user'),
    requested_schema: z
      .record(z.string(), z.unknown())
      .describe('the JSON schema of the answer: an object of primitive fields, with defaults and enums'),
    server: z.string().describe("the MCP server's name"),
    server_id: z.string(),
  })
  .meta({ id: 'McpElicitation' });

const ApprovalSchema = z.object({
  type: z.string(),
  tool_call_id: z.string(),
  approve: z.boolean().optional(),
  reason: z.string().nullish(),
});

export const ToolReturnMessageSchema = z.object({
  ...messageFields,
  message_type: z.literal('tool_return_message'),
  ...ToolReturnSchema.omit({ type: true }).shape,
  tool_return: z.string().describe("the first return's text (Letta's deprecated field): images as a note"),
  tool_returns: z.array(ToolReturnSchema),
});
export type ToolReturnMessage = z.infer<typeof ToolReturnMessageSchema>;

/** Letta's LettaMessage: one part of a stored message, by `message_type`. */
export const LettaMessageSchema = z
  .discriminatedUnion('message_type', [
    z.object({ ...messageFields, message_type: z.literal('system_message'), content: z.string() }),
    z.object({ ...messageFields, message_type: z.literal('user_message'), content: z.string() }),
    z.object({
      ...messageFields,
      message_type: z.literal('reasoning_message'),
      reasoning: z.string(),
      source: z.literal('reasoner_model'),
      signature: z.string().nullable(),
    }),
    z.object({ ...messageFields, message_type: z.literal('assistant_message'), content: z.string() }),
    z.object({
      ...messageFields,
      message_type: z.literal('tool_call_message'),
      tool_call: ToolCallSchema,
      tool_calls: z.array(ToolCallSchema),
    }),
    z.object({
      ...messageFields,
      message_type: z.literal('approval_request_message'),
      tool_call: ToolCallSchema,
      tool_calls: z.array(ToolCallSchema),
      elicitations: z
        .array(ElicitationSchema)
        .optional()
        .describe(
          "An extension: the calls that wait for an answer to their MCP server's question (approve with `elicitation_response` to answer it)",
        ),
    }),
    z.object({
      ...messageFields,
      message_type: z.literal('approval_response_message'),
      approvals: z.array(ApprovalSchema),
      approve: z.boolean().nullable(),
      approval_request_id: z.string().nullable(),
      reason: z.string().nullable(),
    }),
    ToolReturnMessageSchema,
  ])
  .meta({ id: 'LettaMessage' });
export type LettaMessage = z.infer<typeof LettaMessageSchema>;

/** A piece of a tool call: its name comes with the first piece only (Letta's ToolCallDelta). */
const ToolCallDeltaSchema = z.object({
  name: z.string().nullable(),
  arguments: z.string(),
  tool_call_id: z.string(),
});

/** A piece of a tool call or approval request, as a `stream_tokens` stream sends it. */
export const ToolCallChunkSchema = z
  .object({
    ...messageFields,
    message_type: z.enum(['tool_call_message', 'approval_request_message']),
    tool_call: ToolCallDeltaSchema,
    tool_calls: ToolCallDeltaSchema,
  })
  .meta({ id: 'ToolCallChunk' });
export type ToolCallChunk = z.infer<typeof ToolCallChunkSchema>;

export const RunSchema = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    conversation_id: z.string().nullable(),
    status: z.enum(['created', 'running', 'completed', 'failed', 'cancelled']),
    stop_reason: z.string().nullable(),
    background: z.boolean(),
    metadata: JsonObject,
    request_config: JsonObject.nullable(),
    callback_url: z.string().nullable(),
    callback_sent_at: Time,
    callback_status_code: z.number().int().nullable(),
    callback_error: z.string().nullable(),
    created_at: Time,
    completed_at: Time,
    total_duration_ns: z.number().nullable(),
  })
  .meta({ id: 'Run' });
export type Run = z.infer<typeof RunSchema>;

export const UsageStatisticsSchema = z
  .object({
    message_type: z.literal('usage_statistics'),
    completion_tokens: z.number(),
    prompt_tokens: z.number(),
    total_tokens: z.number(),
    step_count: z.number(),
    run_ids: z.null(),
    cached_input_tokens: z.number(),
    cache_write_tokens: z.null(),
    reasoning_tokens: z.number(),
  })
  .meta({ id: 'LettaUsageStatistics' });
export type UsageStatistics = z.infer<typeof UsageStatisticsSchema>;

export const ConversationSchema = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    summary: z.string().nullable(),
    in_context_message_ids: z.array(z.string()),
    isolated_block_ids: z.array(z.string()),
    model: z.string().nullable(),
    model_settings: JsonObject.nullable(),
    last_message_at: Time,
    created_by_id: z.null(),
    last_updated_by_id: z.null(),
    created_at: Time,
    updated_at: Time,
  })
  .meta({ id: 'Conversation' });
export type Conversation = z.infer<typeof ConversationSchema>;

export const StopReasonSchema = z
  .object({ message_type: z.literal('stop_reason'), stop_reason: z.string() })
  .meta({ id: 'LettaStopReason' });
export type StopReason = z.infer<typeof StopReasonSchema>;

/** What a request that does not stream answers with. */
export const LettaResponseSchema = z
  .object({
    messages: z.array(LettaMessageSchema),
    stop_reason: StopReasonSchema,
    usage: UsageStatisticsSchema,
    logprobs: z.null(),
    turns: z.null(),
  })
  .meta({ id: 'LettaResponse' });
export type LettaResponse = z.infer<typeof LettaResponseSchema>;

export const PassageSchema = z
  .object({
    id: z.string(),
    text: z.string(),
    embedding: z.array(z.number()).nullable(),
    embedding_config: JsonObject.nullable(),
    archive_id: z.string(),
    tags: z.array(z.string()),
    metadata: JsonObject,
    file_id: z.null(),
    file_name: z.null(),
    source_id: z.null(),
    is_deleted: z.boolean(),
    created_by_id: z.null(),
    last_updated_by_id: z.null(),
    created_at: Time,
    updated_at: Time,
  })
  .meta({ id: 'Passage' });
export type Passage = z.infer<typeof PassageSchema>;

export const ArchiveSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    embedding_config: JsonObject.nullable(),
    vector_db_provider: z.literal('native'),
    metadata: JsonObject,
    created_by_id: z.null(),
    last_updated_by_id: z.null(),
    created_at: Time,
    updated_at: Time,
  })
  .meta({ id: 'Archive' });
export type Archive = z.infer<typeof ArchiveSchema>;

export const ArchivalSearchResponseSchema = z
  .object({
    results: z.array(
      z.object({ id: z.string(), timestamp: z.string(), content: z.string(), tags: z.array(z.string()) }),
    ),
    count: z.number().int(),
  })
  .meta({ id: 'ArchivalMemorySearchResponse' });

/** Letta's PassageSearchResult: a passage with its score (cosine similarity; 0 for a text match). */
export const PassageSearchResultSchema = z
  .object({ passage: PassageSchema, score: z.number(), metadata: JsonObject })
  .meta({ id: 'PassageSearchResult' });

export const StepSchema = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    run_id: z.string().nullable(),
    model: z.string().nullable(),
    model_handle: z.string().nullable(),
    provider_name: z.string().nullable(),
    prompt_tokens: z.number(),
    completion_tokens: z.number(),
    total_tokens: z.number(),
    cached_input_tokens: z.number(),
    reasoning_tokens: z.number(),
    stop_reason: z.string().nullable(),
    status: z.literal('success'),
    feedback: z.enum(['positive', 'negative']).nullable(),
    tags: z.array(z.string()),
    error_type: z.null(),
    error_data: z.null(),
    created_at: Time,
  })
  .meta({ id: 'Step' });
export type Step = z.infer<typeof StepSchema>;

export const IdentitySchema = z
  .object({
    id: z.string(),
    identifier_key: z.string(),
    name: z.string(),
    identity_type: z.enum(['org', 'user', 'other']),
    project_id: z.string().nullable(),
    agent_ids: z.array(z.string()),
    block_ids: z.array(z.string()),
    organization_id: z.null(),
    properties: z.array(z.object({ key: z.string(), value: z.unknown(), type: z.string() })),
  })
  .meta({ id: 'Identity' });
export type Identity = z.infer<typeof IdentitySchema>;
