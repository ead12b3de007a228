/**
 * Letta's tool-rule solver (letta/helpers/tool_rule_solver.py) as pure, deterministic functions: the
 * turn's workflow calls them between model calls, the system prompt shows the rules as they render them
 * (src/agent/system-prompt.ts), and unit tests pin them rule by rule. The state is what
 * this request has called so far, in order, and the last tool's output.
 */

/** The fields every rule has; `prompt_template` is accepted and ignored, as Letta does. */
type RuleBase = {
  tool_name: string;
  prompt_template?: string | null;
};

type Scalar = string | number | boolean | null;

/**
 * A condition on one top-level argument of a call (an extension of Letta's `requires_approval` rule):
 * src/approvals/policies.ts evaluates it.
 */
export type ApprovalCondition =
  | { argument: string; op: 'eq' | 'ne'; value: Scalar }
  | { argument: string; op: 'gt' | 'gte' | 'lt' | 'lte'; value: number }
  | { argument: string; op: 'in' | 'not_in'; value: Scalar[] }
  | { argument: string; op: 'matches' | 'starts_with' | 'outside_folder'; value: string };

/** A policy's fields beyond Letta's `requires_approval` rule. */
export type ApprovalPolicy = {
  when?: ApprovalCondition[] | null;
  approval_timeout_seconds?: number | null;
  reminder_after_seconds?: number | null;
};

/**
 * Letta's nine tool-rule types (letta/schemas/tool_rule.py), discriminated on `type`: the plain type the
 * workflow works with; src/schemas/tool-rules.ts parses a request's rules into it.
 */
export type ToolRule = RuleBase &
  (
    | { type: 'run_first'; args?: Record<string, unknown> | null }
    | { type: 'exit_loop' }
    | { type: 'continue_loop' }
    | { type: 'required_before_exit' }
    | {
        type: 'constrain_child_tools';
        children: string[];
        child_arg_nodes?: { name: string; args?: Record<string, unknown> | null }[] | null;
      }
    | { type: 'parent_last_tool'; children: string[] }
    | {
        type: 'conditional';
        child_output_mapping: Record<string, string>;
        default_child?: string | null;
        require_output_mapping: boolean;
      }
    | { type: 'max_count_per_step'; max_count_limit: number }
    | ({ type: 'requires_approval' } & ApprovalPolicy)
  );

export type ToolRuleType = ToolRule['type'];
export type ApprovalRule = Extract<ToolRule, { type: 'requires_approval' }>;

export interface ToolCallRecord {
  name: string;
  /** The tool's return text, when short enough to carry in workflow state (conditional rules read it). */
  output?: string;
}

type RuleOf<T extends ToolRule['type']> = Extract<ToolRule, { type: T }>;
const rulesOf = <T extends ToolRule['type']>(rules: ToolRule[], type: T) =>
  rules.filter((r): r is RuleOf<T> => r.type === type);

const lastCall = (history: ToolCallRecord[]) => history[history.length - 1];

/** What a conditional rule's output maps to: Letta's bool / number / string matching, in key order. */
function conditionalChildren(
  rule: RuleOf<'conditional'>,
  output: string | undefined,
  all: string[],
): string[] {
  const fallback = rule.require_output_mapping ? [] : rule.default_child ? [rule.default_child] : all;
  if (output === undefined) return fallback;
  for (const [key, child] of Object.entries(rule.child_output_mapping)) {
    if (outputMatches(key, output)) return [child];
  }
  return rule.default_child ? [rule.default_child] : rule.require_output_mapping ? [] : all;
}

function outputMatches(key: string, output: string): boolean {
  const lowered = key.toLowerCase();
  if (lowered === 'true' || lowered === 'false') return output.trim().toLowerCase() === lowered;
  if (key.trim() !== '' && !Number.isNaN(Number(key))) {
    return output.trim() !== '' && Number(output) === Number(key);
  }
  return output === key;
}

/**
 * The tools the model may call next. No history and init rules: exactly the init tools. Otherwise the
 * intersection of what every child, parent, conditional and max-count rule allows. An empty result
 * falls back to every tool, as Letta's v3 loop does.
 */
export function allowedTools(rules: ToolRule[], available: string[], history: ToolCallRecord[]): string[] {
  if (history.length === 0) {
    const inits = rulesOf(rules, 'run_first').map((r) => r.tool_name);
    const gated = new Set(rulesOf(rules, 'parent_last_tool').flatMap((r) => r.children));
    const allowed = inits.length
      ? inits.filter((name) => available.includes(name))
      : available.filter((name) => !gated.has(name));
    return allowed.length ? allowed : available;
  }
  const last = lastCall(history);
  let allowed = new Set(available);
  const restrict = (names: string[]) => (allowed = new Set(names.filter((n) => allowed.has(n))));
  for (const rule of rules) {
    if (rule.type === 'constrain_child_tools' && last?.name === rule.tool_name) restrict(rule.children);
    if (rule.type === 'conditional' && last?.name === rule.tool_name) {
      restrict(conditionalChildren(rule, last.output, available));
    }
    if (rule.type === 'parent_last_tool') {
      restrict(
        last?.name === rule.tool_name
          ? rule.children
          : available.filter((name) => !rule.children.includes(name)),
      );
    }
    if (rule.type === 'max_count_per_step') {
      const calls = history.filter((h) => h.name === rule.tool_name).length;
      if (calls >= rule.max_count_limit) restrict(available.filter((name) => name !== rule.tool_name));
    }
  }
  return allowed.size ? available.filter((name) => allowed.has(name)) : available;
}

/**
 * What a turn that continues as new carries of a request's calls: the rules read only whether there
 * were any, the last one (its name and output), and how often each tool was called, up to the most
 * any `max_count_per_step` rule of it counts (at least once, for `required_before_exit`). So each tool
 * keeps that many records, without outputs, and the last call stays last: every function of this
 * module answers the same for the carried history as for the whole one (test/tool-rules.test.ts),
 * and a request of thousands of steps carries a few records per tool.
 */
export function carriedHistory(rules: ToolRule[], history: ToolCallRecord[]): ToolCallRecord[] {
  const last = lastCall(history);
  if (!last) return [];
  const counted = (name: string) =>
    Math.max(
      1,
      ...rulesOf(rules, 'max_count_per_step')
        .filter((r) => r.tool_name === name)
        .map((r) => r.max_count_limit),
    );
  const kept = new Map<string, number>([[last.name, 1]]);
  const earlier: ToolCallRecord[] = [];
  for (const { name } of history.slice(0, -1)) {
    const count = kept.get(name) ?? 0;
    if (count >= counted(name)) continue;
    kept.set(name, count + 1);
    earlier.push({ name });
  }
  return [...earlier, last];
}

/** Init rules at the start, or a child / conditional / parent rule on the tool just called. */
export function mustCallTool(rules: ToolRule[], history: ToolCallRecord[]): boolean {
  if (history.length === 0) return rulesOf(rules, 'run_first').length > 0;
  const last = lastCall(history).name;
  return rules.some(
    (r) =>
      (r.type === 'constrain_child_tools' || r.type === 'conditional' || r.type === 'parent_last_tool') &&
      r.tool_name === last,
  );
}

export const isTerminal = (rules: ToolRule[], name: string) =>
  rulesOf(rules, 'exit_loop').some((r) => r.tool_name === name);

/**
 * The rules without repeats, first kept: a rule repeats another when all but its `prompt_template`
 * (which Letta ignores) is the same, as Letta's rule equality has it (a `max_count_per_step` rule of
 * another limit is another rule).
 */
export function uniqueRules(rules: ToolRule[]): ToolRule[] {
  const seen = new Set<string>();
  return rules.filter((rule) => {
    const { prompt_template: _ignored, ...identity } = rule;
    const key = JSON.stringify(identity);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The approval policies: `requires_approval` rules, some with conditions on the calls' arguments. */
export const approvalRules = (rules: ToolRule[]): ApprovalRule[] => rulesOf(rules, 'requires_approval');

/** The tools whose calls may wait for a person's approval (all of them, or those a policy's conditions pick). */
export const approvalRequiredTools = (rules: ToolRule[]) => approvalRules(rules).map((r) => r.tool_name);

/** What the model is told when it ends its turn before calling `names`, which the rules require. */
export const requiredToolAlert = (names: string[]) =>
  `[This is an automated system message hidden from the user] ToolRuleViolated: You must call ${names.join(', ')} at least once to exit the loop.`;

/** Tools a `required_before_exit` rule names that are attached and not yet called in this request. */
export function uncalledRequiredTools(
  rules: ToolRule[],
  available: string[],
  history: ToolCallRecord[],
): string[] {
  return rulesOf(rules, 'required_before_exit')
    .map((r) => r.tool_name)
    .filter((name) => available.includes(name) && !history.some((h) => h.name === name));
}

/** Arguments rules fix for this call: an init rule's `args` on the first call, a child node's `args`. */
export function prefilledArgs(
  rules: ToolRule[],
  name: string,
  history: ToolCallRecord[],
): Record<string, unknown> | undefined {
  if (history.length === 0) {
    const init = rulesOf(rules, 'run_first').find((r) => r.tool_name === name && r.args);
    if (init?.args) return init.args;
  }
  const last = lastCall(history);
  for (const rule of rulesOf(rules, 'constrain_child_tools')) {
    if (rule.tool_name !== last?.name) continue;
    const node = rule.child_arg_nodes?.find((n) => n.name === name && n.args);
    if (node?.args) return node.args;
  }
  return undefined;
}

const DEFAULT_TEMPLATES: Partial<Record<ToolRule['type'], string>> = {
  constrain_child_tools:
    "<tool_rule>\nAfter using {{ tool_name }}, you must use one of these tools: {{ children | join(', ') }}\n</tool_rule>",
  parent_last_tool:
    "<tool_rule>\n{{ children | join(', ') }} can only be used after {{ tool_name }}\n</tool_rule>",
  conditional:
    '<tool_rule>\n{{ tool_name }} will determine which tool to use next based on its output\n</tool_rule>',
  exit_loop: '<tool_rule>\n{{ tool_name }} ends your response (yields control) when called\n</tool_rule>',
  continue_loop: '<tool_rule>\n{{ tool_name }} requires continuing your response when called\n</tool_rule>',
  required_before_exit:
    '<tool_rule>{{ tool_name }} must be called before ending the conversation</tool_rule>',
  max_count_per_step:
    '<tool_rule>\n{{ tool_name }}: max {{ max_count_limit }} use(s) per response\n</tool_rule>',
};

/**
 * The subset of Jinja that Letta's rule templates use: `{{ field }}` and `{{ field | join('sep') }}`.
 * A rule's own `prompt_template` wins over the default, as in Letta.
 */
export function renderRule(rule: ToolRule): string | undefined {
  const template = rule.prompt_template || DEFAULT_TEMPLATES[rule.type];
  if (!template) return undefined;
  const fields = rule as Record<string, unknown>;
  return template.replace(
    /\{\{\s*(\w+)\s*(?:\|\s*join\(\s*(['"])(.*?)\2\s*\)\s*)?\}\}/g,
    (_, name, _q, sep) => {
      const value = fields[name];
      if (Array.isArray(value)) return value.join(sep ?? ', ');
      return value === undefined || value === null ? '' : String(value);
    },
  );
}

/** Letta's order of rule kinds in the prompt and in violation hints; required_before_exit is in neither. */
const PROMPT_ORDER: ToolRule['type'][][] = [
  ['run_first'],
  ['continue_loop'],
  ['constrain_child_tools', 'conditional', 'max_count_per_step'],
  ['parent_last_tool'],
  ['exit_loop'],
];
const inPromptOrder = (rules: ToolRule[]) =>
  PROMPT_ORDER.flatMap((kinds) => rules.filter((r) => kinds.includes(r.type)));

export const TOOL_RULES_DESCRIPTION =
  'The following constraints define rules for tool usage and guide desired behavior. These rules must be followed to ensure proper tool execution and workflow. A single response may contain multiple tool calls.';

/** The `tool_usage_rules` block's value, or undefined when no rule renders a prompt. */
export function compileRulePrompts(rules: ToolRule[]): string | undefined {
  const prompts = inPromptOrder(rules)
    .map(renderRule)
    .filter((p): p is string => Boolean(p));
  return prompts.length ? prompts.join('\n') : undefined;
}

/** Python's repr of a list of strings, which Letta's messages print. */
const pyList = (names: string[]) => `[${names.map((n) => `'${n}'`).join(', ')}]`;

/** The return a call that breaks a rule gets instead of running: Letta's `[ToolConstraintError]` text. */
export function constraintViolation(
  rules: ToolRule[],
  name: string,
  allowed: string[],
  history: ToolCallRecord[],
): string {
  const previous = lastCall(history)?.name;
  const hints = inPromptOrder(rules)
    .filter((r) => r.tool_name === name || r.tool_name === previous)
    .map(renderRule)
    .filter((p): p is string => Boolean(p));
  let text = `[ToolConstraintError] Cannot call ${name}, valid tools include: ${pyList(allowed)}.`;
  if (hints.length)
    text += `\n** Hint: Possible rules that were violated:\n${hints.map((h) => `\t- ${h}`).join('\n')}`;
  return text;
}
