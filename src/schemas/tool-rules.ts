import { z } from 'zod';

// Letta's nine tool-rule types (letta/schemas/tool_rule.py), discriminated on `type`. Sandbox-safe:
// the workflow imports these too. `prompt_template` is accepted and ignored, as Letta does.
const base = { tool_name: z.string().min(1), prompt_template: z.string().nullish() };

export const ToolRuleSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('run_first'), ...base, args: z.record(z.string(), z.unknown()).nullish() }),
  z.object({ type: z.literal('exit_loop'), ...base }),
  z.object({ type: z.literal('continue_loop'), ...base }),
  z.object({
    type: z.literal('constrain_child_tools'),
    ...base,
    children: z.array(z.string()),
    child_arg_nodes: z
      .array(z.object({ name: z.string(), args: z.record(z.string(), z.unknown()).nullish() }))
      .nullish(),
  }),
  z.object({ type: z.literal('parent_last_tool'), ...base, children: z.array(z.string()) }),
  z.object({
    type: z.literal('conditional'),
    ...base,
    child_output_mapping: z.record(z.string(), z.string()).refine((m) => Object.keys(m).length > 0, {
      message: 'child_output_mapping needs at least one entry',
    }),
    default_child: z.string().nullish(),
    require_output_mapping: z.boolean().default(false),
  }),
  z.object({ type: z.literal('max_count_per_step'), ...base, max_count_limit: z.number().int().min(1) }),
  z.object({ type: z.literal('required_before_exit'), ...base }),
  z.object({ type: z.literal('requires_approval'), ...base }),
]);

export type ToolRule = z.infer<typeof ToolRuleSchema>;
export type ToolRuleType = ToolRule['type'];
