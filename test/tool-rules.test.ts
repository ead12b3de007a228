import fc from 'fast-check';
import {
  allowedTools,
  carriedHistory,
  compileRulePrompts,
  constraintViolation,
  isTerminal,
  mustCallTool,
  prefilledArgs,
  renderRule,
  approvalRequiredTools,
  uncalledRequiredTools,
  uniqueRules,
} from '../contracts/tool-rules';
import type { ToolRule } from '../src/schemas/tool-rules';
import type { ToolCallRecord } from '../contracts/tool-rules';

const tools = ['a', 'b', 'c', 'd'];
const calls = (...names: string[]) => names.map((name) => ({ name }));

describe('tool rules, rule by rule', () => {
  it('run_first: only the init tools at the start, forced, with its args on the first call', () => {
    const rules: ToolRule[] = [{ type: 'run_first', tool_name: 'b', args: { limit: 5 } }];
    expect(allowedTools(rules, tools, [])).toEqual(['b']);
    expect(mustCallTool(rules, [])).toBe(true);
    expect(prefilledArgs(rules, 'b', [])).toEqual({ limit: 5 });
    expect(allowedTools(rules, tools, calls('b'))).toEqual(tools);
    expect(mustCallTool(rules, calls('b'))).toBe(false);
    expect(prefilledArgs(rules, 'b', calls('b'))).toBeUndefined();
    expect(renderRule(rules[0])).toBeUndefined();
  });

  it('exit_loop: the tool ends the turn', () => {
    const rules: ToolRule[] = [{ type: 'exit_loop', tool_name: 'c' }];
    expect(isTerminal(rules, 'c')).toBe(true);
    expect(isTerminal(rules, 'a')).toBe(false);
    expect(allowedTools(rules, tools, [])).toEqual(tools);
    expect(renderRule(rules[0])).toBe(
      '<tool_rule>\nc ends your response (yields control) when called\n</tool_rule>',
    );
  });

  it('continue_loop: does not restrict, and renders its prompt', () => {
    const rules: ToolRule[] = [{ type: 'continue_loop', tool_name: 'a' }];
    expect(allowedTools(rules, tools, calls('a'))).toEqual(tools);
    expect(renderRule(rules[0])).toBe(
      '<tool_rule>\na requires continuing your response when called\n</tool_rule>',
    );
  });

  it('constrain_child_tools: after the parent only the children, forced, with child args', () => {
    const rules: ToolRule[] = [
      {
        type: 'constrain_child_tools',
        tool_name: 'a',
        children: ['b', 'c'],
        child_arg_nodes: [{ name: 'c', args: { x: 1 } }],
      },
    ];
    expect(allowedTools(rules, tools, [])).toEqual(tools);
    expect(allowedTools(rules, tools, calls('a'))).toEqual(['b', 'c']);
    expect(mustCallTool(rules, calls('a'))).toBe(true);
    expect(mustCallTool(rules, calls('b'))).toBe(false);
    expect(prefilledArgs(rules, 'c', calls('a'))).toEqual({ x: 1 });
    expect(prefilledArgs(rules, 'b', calls('a'))).toBeUndefined();
    expect(renderRule(rules[0])).toBe(
      '<tool_rule>\nAfter using a, you must use one of these tools: b, c\n</tool_rule>',
    );
  });

  it('parent_last_tool: children only right after the parent, never otherwise', () => {
    const rules: ToolRule[] = [{ type: 'parent_last_tool', tool_name: 'a', children: ['d'] }];
    expect(allowedTools(rules, tools, [])).toEqual(['a', 'b', 'c']);
    expect(allowedTools(rules, tools, calls('b'))).toEqual(['a', 'b', 'c']);
    expect(allowedTools(rules, tools, calls('a'))).toEqual(['d']);
    expect(mustCallTool(rules, calls('a'))).toBe(true);
    expect(renderRule(rules[0])).toBe('<tool_rule>\nd can only be used after a\n</tool_rule>');
  });

  it('conditional: the output picks the child; no match falls to the default, or all, or none when strict', () => {
    const rule: ToolRule = {
      type: 'conditional',
      tool_name: 'a',
      child_output_mapping: { true: 'b', '42': 'c', done: 'd' },
      default_child: null,
      require_output_mapping: false,
    };
    expect(allowedTools([rule], tools, [{ name: 'a', output: 'True' }])).toEqual(['b']);
    expect(allowedTools([rule], tools, [{ name: 'a', output: '42.0' }])).toEqual(['c']);
    expect(allowedTools([rule], tools, [{ name: 'a', output: 'done' }])).toEqual(['d']);
    expect(allowedTools([rule], tools, [{ name: 'a', output: 'other' }])).toEqual(tools);
    expect(allowedTools([{ ...rule, default_child: 'c' }], tools, [{ name: 'a', output: 'other' }])).toEqual([
      'c',
    ]);
    // Strict with no match leaves nothing; the v3 loop then falls back to every tool.
    expect(
      allowedTools([{ ...rule, require_output_mapping: true }], tools, [{ name: 'a', output: 'x' }]),
    ).toEqual(tools);
    expect(mustCallTool([rule], calls('a'))).toBe(true);
    expect(renderRule(rule)).toBe(
      '<tool_rule>\na will determine which tool to use next based on its output\n</tool_rule>',
    );
  });

  it('max_count_per_step: the tool disappears once called the limit times', () => {
    const rules: ToolRule[] = [{ type: 'max_count_per_step', tool_name: 'b', max_count_limit: 2 }];
    expect(allowedTools(rules, tools, calls('b'))).toEqual(tools);
    expect(allowedTools(rules, tools, calls('b', 'a', 'b'))).toEqual(['a', 'c', 'd']);
    expect(renderRule(rules[0])).toBe('<tool_rule>\nb: max 2 use(s) per response\n</tool_rule>');
  });

  it('required_before_exit: names what is still uncalled, and stays out of the compiled prompt', () => {
    const rules: ToolRule[] = [
      { type: 'required_before_exit', tool_name: 'c' },
      { type: 'required_before_exit', tool_name: 'zz' },
    ];
    expect(uncalledRequiredTools(rules, tools, calls('a'))).toEqual(['c']);
    expect(uncalledRequiredTools(rules, tools, calls('c'))).toEqual([]);
    expect(allowedTools(rules, tools, [])).toEqual(tools);
    expect(compileRulePrompts(rules)).toBeUndefined();
    expect(renderRule(rules[0])).toBe(
      '<tool_rule>c must be called before ending the conversation</tool_rule>',
    );
  });

  it('requires_approval: does not restrict, marks the tool', () => {
    const rules: ToolRule[] = [{ type: 'requires_approval', tool_name: 'd' }];
    expect(approvalRequiredTools(rules)).toEqual(['d']);
    expect(allowedTools(rules, tools, calls('d'))).toEqual(tools);
    expect(renderRule(rules[0])).toBeUndefined();
  });

  it('rules combine by intersection', () => {
    const rules: ToolRule[] = [
      { type: 'constrain_child_tools', tool_name: 'a', children: ['b', 'c'] },
      { type: 'max_count_per_step', tool_name: 'c', max_count_limit: 1 },
    ];
    expect(allowedTools(rules, tools, calls('c', 'a'))).toEqual(['b']);
  });

  it("a rule's own prompt_template wins over the default", () => {
    expect(
      renderRule({ type: 'exit_loop', tool_name: 'x', prompt_template: 'Stop after {{ tool_name }}.' }),
    ).toBe('Stop after x.');
  });

  it('compiles prompts in Letta order and explains violations', () => {
    const rules: ToolRule[] = [
      { type: 'exit_loop', tool_name: 'd' },
      { type: 'constrain_child_tools', tool_name: 'a', children: ['b'] },
      { type: 'continue_loop', tool_name: 'a' },
    ];
    expect(compileRulePrompts(rules)).toBe(
      [
        '<tool_rule>\na requires continuing your response when called\n</tool_rule>',
        '<tool_rule>\nAfter using a, you must use one of these tools: b\n</tool_rule>',
        '<tool_rule>\nd ends your response (yields control) when called\n</tool_rule>',
      ].join('\n'),
    );
    expect(constraintViolation(rules, 'c', ['b'], calls('a'))).toBe(
      "[ToolConstraintError] Cannot call c, valid tools include: ['b'].\n** Hint: Possible rules that were violated:\n" +
        '\t- <tool_rule>\na requires continuing your response when called\n</tool_rule>\n' +
        '\t- <tool_rule>\nAfter using a, you must use one of these tools: b\n</tool_rule>',
    );
  });
});

describe('uniqueRules', () => {
  it('keeps the first of rules alike but for prompt_template, and rules of another limit or type', () => {
    const rules: ToolRule[] = [
      { type: 'exit_loop', tool_name: 'a' },
      { type: 'exit_loop', tool_name: 'a', prompt_template: 'ignored' },
      { type: 'continue_loop', tool_name: 'a' },
      { type: 'max_count_per_step', tool_name: 'b', max_count_limit: 2 },
      { type: 'max_count_per_step', tool_name: 'b', max_count_limit: 2 },
      { type: 'max_count_per_step', tool_name: 'b', max_count_limit: 3 },
    ];
    expect(uniqueRules(rules)).toEqual([rules[0], rules[2], rules[3], rules[5]]);
  });
});

describe('the history a continued turn carries (carriedHistory)', () => {
  const name = fc.constantFrom(...tools);
  const rule: fc.Arbitrary<ToolRule> = fc.oneof(
    fc.record({ type: fc.constant('run_first' as const), tool_name: name }),
    fc.record({ type: fc.constant('exit_loop' as const), tool_name: name }),
    fc.record({ type: fc.constant('required_before_exit' as const), tool_name: name }),
    fc.record({
      type: fc.constant('max_count_per_step' as const),
      tool_name: name,
      max_count_limit: fc.integer({ min: 1, max: 4 }),
    }),
    fc.record({
      type: fc.constant('constrain_child_tools' as const),
      tool_name: name,
      children: fc.subarray(tools, { minLength: 1 }),
      child_arg_nodes: fc.constant<{ name: string; args: Record<string, unknown> }[]>([
        { name: 'b', args: { x: 1 } },
      ]),
    }),
    fc.record({
      type: fc.constant('parent_last_tool' as const),
      tool_name: name,
      children: fc.subarray(tools),
    }),
    fc.record({
      type: fc.constant('conditional' as const),
      tool_name: name,
      child_output_mapping: fc.constant({ true: 'b', '2': 'c' }),
      require_output_mapping: fc.boolean(),
      default_child: fc.option(name, { nil: undefined }),
    }),
  );
  const record: fc.Arbitrary<ToolCallRecord> = fc.record(
    { name, output: fc.constantFrom('true', 'false', '2', 'other') },
    { requiredKeys: ['name'] },
  );

  it('answers every rule function as the whole history does, and keeps a few records per tool', () => {
    fc.assert(
      fc.property(fc.array(rule, { maxLength: 5 }), fc.array(record, { maxLength: 60 }), (rules, history) => {
        const carried = carriedHistory(rules, history);
        const answers = (h: ToolCallRecord[]) => ({
          allowed: allowedTools(rules, tools, h),
          forced: mustCallTool(rules, h),
          uncalled: uncalledRequiredTools(rules, tools, h),
          prefilled: tools.map((t) => prefilledArgs(rules, t, h)),
          violations: tools.map((t) => constraintViolation(rules, t, ['a'], h)),
        });
        expect(answers(carried)).toEqual(answers(history));
        // Carried again, nothing changes: a turn that continues twice carries the same.
        expect(carriedHistory(rules, carried)).toEqual(carried);
        expect(carried.length).toBeLessThanOrEqual(tools.length * 4 + 1);
      }),
      { numRuns: 2000 },
    );
  });
});
