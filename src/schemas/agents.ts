import { z } from 'zod';
import { ToolRuleSchema } from './tool-rules';
import { isTimeZone } from '../time';

export const CreateBlockSchema = z.object({
  label: z.string().min(1),
  // Letta's CreateBlock makes a missing or null value an empty one.
  value: z
    .string()
    .nullish()
    .transform((value) => value ?? ''),
  /** Stored as PostgreSQL's integer. */
  limit: z.number().int().positive().max(2147483647).nullish(),
  description: z.string().nullish(),
  read_only: z.boolean().nullish(),
  hidden: z.boolean().nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  tags: z.array(z.string()).nullish(),
});

export const LlmConfigSchema = z
  .object({
    model: z.string().min(1),
    model_endpoint_type: z.string().min(1),
    model_endpoint: z.string().nullish(),
    context_window: z.number().int().positive(),
    handle: z.string().nullish(),
    temperature: z.number().nullish(),
    max_tokens: z.number().int().positive().nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    strict: z.boolean().nullish(),
    reasoning_effort: z.string().nullish(),
  })
  .loose();

/**
 * Letta's model_settings (one shape per provider; the fields every provider shares are read): what is
 * sent to the model. Stored as the agent's llm_config.
 */
export const ModelSettingsSchema = z
  .object({
    provider_type: z.string().nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    max_output_tokens: z.number().int().positive().nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    strict: z.boolean().nullish(),
    reasoning: z
      .object({ reasoning_effort: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']).nullish() })
      .loose()
      .nullish(),
  })
  .loose();
export type ModelSettings = z.infer<typeof ModelSettingsSchema>;

/** Letta's CreateAgent: every field optional; unknown fields are ignored, as pydantic does. */
export const CreateAgentSchema = z.object({
  name: z.string().min(1).nullish(),
  agent_type: z.string().nullish(),
  description: z.string().nullish(),
  system: z.string().nullish(),
  memory_blocks: z.array(CreateBlockSchema).nullish(),
  block_ids: z.array(z.string()).nullish(),
  tools: z.array(z.string()).nullish(),
  tool_ids: z.array(z.string()).nullish(),
  include_base_tools: z.boolean().nullish(),
  include_multi_agent_tools: z.boolean().nullish(),
  include_base_tool_rules: z.boolean().nullish(),
  tool_rules: z.array(ToolRuleSchema).nullish(),
  tags: z.array(z.string()).nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  model: z.string().nullish(),
  llm_config: LlmConfigSchema.nullish(),
  embedding: z.string().nullish(),
  embedding_config: z.record(z.string(), z.unknown()).nullish(),
  context_window_limit: z.number().int().positive().nullish(),
  model_settings: ModelSettingsSchema.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  secrets: z.record(z.string(), z.string()).nullish(),
  tool_exec_environment_variables: z.record(z.string(), z.string()).nullish(),
  timezone: z
    .string()
    .refine(isTimeZone, 'expected an IANA time zone, e.g. America/New_York or UTC')
    .nullish(),
  /** Beyond Letta: deny pending approvals after this long (null: wait for as long as it takes). */
  approval_timeout_seconds: z.number().int().positive().nullish(),
  /** Letta's file controls (at most 1000 open files; a char limit fits PostgreSQL's integer). */
  max_files_open: z.number().int().positive().max(1000, 'max_files_open cannot exceed 1000').nullish(),
  per_file_view_window_char_limit: z.number().int().positive().max(2147483647).nullish(),
});
export type CreateAgent = z.infer<typeof CreateAgentSchema>;

export const UpdateAgentSchema = CreateAgentSchema.omit({
  memory_blocks: true,
  include_base_tools: true,
}).extend({
  last_stop_reason: z.string().nullish(),
});
export type UpdateAgent = z.infer<typeof UpdateAgentSchema>;

/**
 * A block's change; a value past the limit given with it is refused as Letta's BlockUpdate refuses it
 * (422). A value past the block's stored limit is the core's check (src/agent/blocks.ts).
 */
export const UpdateBlockSchema = CreateBlockSchema.extend({ value: z.string() })
  .partial()
  .superRefine((patch, ctx) => {
    if (patch.value != null && patch.limit != null && patch.value.length > patch.limit)
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: `Edit failed: Exceeds ${patch.limit} character limit (requested ${patch.value.length})`,
      });
  });
