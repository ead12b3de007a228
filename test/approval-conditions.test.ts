import {
  conditionMet,
  MATCHED_ARGUMENT_CHARS,
  waitingCallIds,
  waitSettings,
  waitsUnder,
} from '../src/approvals/policies';
import {
  ApprovalConditionSchema,
  type ApprovalCondition,
  type ApprovalRule,
} from '../src/schemas/tool-rules';

const met = (condition: ApprovalCondition, args: Record<string, unknown>) => conditionMet(condition, args);

describe('approval conditions, op by op', () => {
  it('compares numbers, and numbers the model wrote as strings', () => {
    const over100: ApprovalCondition = { argument: 'amount', op: 'gt', value: 100 };
    expect(met(over100, { amount: 500 })).toBe(true);
    expect(met(over100, { amount: 100 })).toBe(false);
    expect(met(over100, { amount: '500' })).toBe(true);
    expect(met({ argument: 'amount', op: 'gte', value: 100 }, { amount: 100 })).toBe(true);
    expect(met({ argument: 'amount', op: 'lt', value: 0 }, { amount: -1 })).toBe(true);
    expect(met({ argument: 'amount', op: 'lte', value: 0 }, { amount: 1 })).toBe(false);
  });

  it('tells equal values and members of a list', () => {
    expect(met({ argument: 'env', op: 'eq', value: 'prod' }, { env: 'prod' })).toBe(true);
    expect(met({ argument: 'env', op: 'ne', value: 'prod' }, { env: 'prod' })).toBe(false);
    expect(met({ argument: 'force', op: 'eq', value: true }, { force: false })).toBe(false);
    expect(met({ argument: 'amount', op: 'eq', value: 500 }, { amount: '500' })).toBe(true);
    expect(met({ argument: 'amount', op: 'in', value: [100, 500] }, { amount: '500' })).toBe(true);
    expect(met({ argument: 'code', op: 'eq', value: '007' }, { code: 7 })).toBe(false);
    const risky = ['prod', 'billing'];
    expect(met({ argument: 'env', op: 'in', value: risky }, { env: 'billing' })).toBe(true);
    expect(met({ argument: 'env', op: 'not_in', value: risky }, { env: 'dev' })).toBe(true);
    expect(met({ argument: 'env', op: 'not_in', value: risky }, { env: 'prod' })).toBe(false);
  });

  it('matches patterns and prefixes', () => {
    expect(met({ argument: 'to', op: 'matches', value: '@example\\.com$' }, { to: 'a@example.com' })).toBe(
      true,
    );
    expect(met({ argument: 'to', op: 'matches', value: '@example\\.com$' }, { to: 'a@other.org' })).toBe(
      false,
    );
    expect(met({ argument: 'cmd', op: 'starts_with', value: 'rm ' }, { cmd: 'rm -rf /' })).toBe(true);
    expect(met({ argument: 'cmd', op: 'starts_with', value: 'rm ' }, { cmd: 'ls' })).toBe(false);
  });

  it('reads a path as it resolves: `..` cannot climb out of the folder', () => {
    const outside: ApprovalCondition = { argument: 'path', op: 'outside_folder', value: '/data' };
    expect(met(outside, { path: '/data/x.txt' })).toBe(false);
    expect(met(outside, { path: '/data' })).toBe(false);
    expect(met(outside, { path: '/data/a/../b/./c.txt' })).toBe(false);
    expect(met(outside, { path: '/data/../etc/passwd' })).toBe(true);
    expect(met(outside, { path: '/data/../../data2/x' })).toBe(true);
    expect(met(outside, { path: '/database/x' })).toBe(true); // a sibling sharing the prefix
    expect(met(outside, { path: 'data/x.txt' })).toBe(true); // relative: to what, only the tool knows
    expect(met({ argument: 'path', op: 'outside_folder', value: '/data/' }, { path: '/data/x' })).toBe(false);
    expect(met({ argument: 'path', op: 'outside_folder', value: '/' }, { path: '/etc/passwd' })).toBe(false);
  });

  it('counts a missing argument, or one of another type, as met: the call waits', () => {
    expect(met({ argument: 'amount', op: 'lt', value: 100 }, {})).toBe(true);
    expect(met({ argument: 'amount', op: 'lt', value: 100 }, { amount: 'lots' })).toBe(true);
    expect(met({ argument: 'env', op: 'ne', value: 'prod' }, { env: { nested: 1 } })).toBe(true);
    expect(met({ argument: 'path', op: 'outside_folder', value: '/data' }, { path: 7 })).toBe(true);
    const long = 'a'.repeat(MATCHED_ARGUMENT_CHARS + 1);
    expect(met({ argument: 'to', op: 'matches', value: 'b' }, { to: long })).toBe(true);
  });
});

describe('approval policies', () => {
  const pay: ApprovalRule = {
    type: 'requires_approval',
    tool_name: 'pay',
    when: [
      { argument: 'amount', op: 'gt', value: 100 },
      { argument: 'currency', op: 'ne', value: 'EUR' },
    ],
    approval_timeout_seconds: 60,
    reminder_after_seconds: 20,
  };

  it('lets a call wait when any condition is met, and always without conditions', () => {
    expect(waitsUnder(pay, '{"amount": 5, "currency": "EUR"}')).toBe(false);
    expect(waitsUnder(pay, '{"amount": 500, "currency": "EUR"}')).toBe(true);
    expect(waitsUnder(pay, '{"amount": 5, "currency": "USD"}')).toBe(true);
    expect(waitsUnder(pay, 'not json')).toBe(true);
    expect(waitsUnder(pay, '[1]')).toBe(true);
    expect(waitsUnder({ type: 'requires_approval', tool_name: 'pay' }, '{}')).toBe(true);
  });

  it('picks the calls of a reply that wait: client tools always, others by their policies', () => {
    const calls = [
      { id: 'c1', name: 'pay', arguments: '{"amount": 5, "currency": "EUR"}' },
      { id: 'c2', name: 'pay', arguments: '{"amount": 500, "currency": "EUR"}' },
      { id: 'c3', name: 'ask_user', arguments: '{}' },
      { id: 'c4', name: 'lookup', arguments: '{}' },
      { id: 'c5', name: 'delete_all', arguments: '{}' },
    ];
    const pausing = {
      approvalTools: ['ask_user', 'pay', 'delete_all'],
      clientTools: [{ name: 'ask_user' }],
      rules: [pay],
    };
    expect(waitingCallIds(calls, pausing)).toEqual(['c2', 'c3', 'c5']);
  });

  it('takes the smallest timeout and reminder of the waiting calls’ policies', () => {
    const other: ApprovalRule = {
      type: 'requires_approval',
      tool_name: 'wire',
      approval_timeout_seconds: 30,
    };
    expect(waitSettings([pay, other], ['pay', 'wire'])).toEqual({ timeoutSeconds: 30, reminderSeconds: 20 });
    expect(waitSettings([pay, other], ['pay'])).toEqual({ timeoutSeconds: 60, reminderSeconds: 20 });
    expect(waitSettings([pay, other], ['ask_user'])).toEqual({});
  });
});

describe('approval conditions as the API takes them', () => {
  const issues = (condition: unknown) =>
    ApprovalConditionSchema.safeParse(condition).error?.issues.map((i) => i.message) ?? [];

  it('takes each op with a value of its kind', () => {
    for (const condition of [
      { argument: 'amount', op: 'gt', value: 100 },
      { argument: 'env', op: 'in', value: ['prod', 'billing'] },
      { argument: 'to', op: 'matches', value: '^[a-z]+@example\\.com$' },
      { argument: 'path', op: 'outside_folder', value: '/data' },
    ])
      expect(issues(condition)).toEqual([]);
  });

  it('refuses unknown ops, values of the wrong kind, bad or risky patterns, relative folders', () => {
    expect(issues({ argument: 'amount', op: 'greater', value: 1 })).not.toEqual([]);
    expect(issues({ argument: 'amount', op: 'gt', value: '100' })).not.toEqual([]);
    expect(issues({ argument: 'env', op: 'in', value: [] })).not.toEqual([]);
    expect(issues({ argument: 'to', op: 'matches', value: '([a-z' })).toEqual([
      'not a valid regular expression',
    ]);
    expect(issues({ argument: 'to', op: 'matches', value: '(a+)+$' })).toEqual([
      'a repeated group is refused',
    ]);
    expect(issues({ argument: 'to', op: 'matches', value: 'a'.repeat(201) })).not.toEqual([]);
    expect(issues({ argument: 'path', op: 'outside_folder', value: 'data' })).toEqual([
      'the folder must be an absolute path',
    ]);
    expect(issues({ op: 'gt', value: 1 })).not.toEqual([]);
  });
});
