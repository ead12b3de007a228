import { z } from 'zod';
import type { ApprovalCondition, ToolRule } from '../../contracts/tool-rules';

export type { ApprovalCondition, ApprovalRule, ToolRule, ToolRuleType } from '../../contracts/tool-rules';

// Letta's nine tool-rule types (letta/schemas/tool_rule.py), discriminated on `type`, parsed into the
// plain types of contracts/tool-rules.ts. `prompt_template` is accepted and ignored, as Letta does.
const base = { tool_name: z.string().min(1), prompt_template: z.string().nullish() };

/**
 * A repeated group (`(a+)+`, `(a|aa)*`): the shape of catastrophic backtracking. With it refused and
 * the pattern and the argument it reads bounded (MATCHED_ARGUMENT_CHARS), a match stays short.
 */
const REPEATED_GROUP = /\)[+*{]/;

const safePattern = z
  .string()
  .min(1)
  .max(200)
  .refine((pattern) => !REPEATED_GROUP.test(pattern), { message: 'a repeated group is refused' })
  .refine(
    (pattern) => {
      try {
        return Boolean(new RegExp(pattern, 'u'));
      } catch {
        return false;
      }
    },
    { message: 'not a valid regular expression' },
  );

const scalar = z.union([z.string().max(1000), z.number(), z.boolean(), z.null()]);
const argument = z.string().min(1).max(200);

/**
 * A condition on one top-level argument of a call (an extension of Letta's `requires_approval` rule):
 * src/approvals/policies.ts evaluates it.
 */
export const ApprovalConditionSchema = z.discriminatedUnion('op', [
  z.object({ argument, op: z.enum(['eq', 'ne']), value: scalar }),
  z.object({ argument, op: z.enum(['gt', 'gte', 'lt', 'lte']), value: z.number() }),
  z.object({ argument, op: z.enum(['in', 'not_in']), value: z.array(scalar).min(1).max(100) }),
  z.object({ argument, op: z.literal('matches'), value: safePattern }),
  z.object({ argument, op: z.literal('starts_with'), value: z.string().min(1).max(1000) }),
  z.object({
    argument,
    op: z.literal('outside_folder'),
    value: z.string().regex(/^\//, { message: 'the folder must be an absolute path' }).max(1000),
  }),
]) satisfies z.ZodType<ApprovalCondition>;

/**
 * A policy's fields beyond Letta's `requires_approval` rule: the call waits only when one of `when`
 * matches its arguments (always, without it); this tool's approval timeout; a reminder after a delay.
 */
export const approvalPolicyFields = {
  when: z.array(ApprovalConditionSchema).min(1).max(20).nullish(),
  approval_timeout_seconds: z.number().int().positive().nullish(),
  reminder_after_seconds: z.number().int().positive().nullish(),
};

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
  z.object({ type: z.literal('requires_approval'), ...base, ...approvalPolicyFields }),
]) satisfies z.ZodType<ToolRule>;
