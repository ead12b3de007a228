/**
 * Approval policies: which calls of a reply wait for an answer, and for how long. A policy is Letta's
 * `requires_approval` rule with this server's extension fields (src/schemas/tool-rules.ts): `when`,
 * conditions on the call's arguments (the call waits when any of them is met; always, without them),
 * `approval_timeout_seconds` and `reminder_after_seconds`. The model call evaluates them as it stores
 * the reply, the one place that holds the arguments. Pure functions.
 */
import path from 'node:path';
import type { ApprovalCondition, ApprovalRule } from '../schemas/tool-rules';

/** Longest argument a `matches` condition reads; a longer one counts as met (the call waits). */
export const MATCHED_ARGUMENT_CHARS = 1000;

type Scalar = string | number | boolean | null;

const isScalar = (value: unknown): value is Scalar =>
  value === null || ['string', 'number', 'boolean'].includes(typeof value);

/** A number, or a string that is one (models write `"500"` as often as `500`). */
function numberOf(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const parsed = Number(value);
  return Number.isFinite(parsed) ? parsed : undefined;
}

/** Whether an argument is `expected`: a number as the model may write it, as a string, too. */
const sameValue = (value: Scalar, expected: Scalar) =>
  value === expected || (typeof expected === 'number' && numberOf(value) === expected);

/** Whether `file` lies outside `folder`: both absolute, `..` resolved, so that it cannot climb out. */
function outsideFolder(file: string, folder: string): boolean {
  if (!path.posix.isAbsolute(file)) return true; // relative to what the tool alone knows
  const resolved = path.posix.resolve(file);
  const root = path.posix.resolve(folder);
  return !(resolved === root || resolved.startsWith(root === '/' ? '/' : `${root}/`));
}

/** Whether the condition is met by `value`; undefined when the value is not of the type it reads. */
function metBy(condition: ApprovalCondition, value: unknown): boolean | undefined {
  switch (condition.op) {
    case 'eq':
    case 'ne':
      if (!isScalar(value)) return undefined;
      return sameValue(value, condition.value) === (condition.op === 'eq');
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const n = numberOf(value);
      if (n === undefined) return undefined;
      const limit = condition.value;
      return { gt: n > limit, gte: n >= limit, lt: n < limit, lte: n <= limit }[condition.op];
    }
    case 'in':
    case 'not_in':
      if (!isScalar(value)) return undefined;
      return condition.value.some((listed) => sameValue(value, listed)) === (condition.op === 'in');
    case 'matches':
      if (typeof value !== 'string' || value.length > MATCHED_ARGUMENT_CHARS) return undefined;
      return new RegExp(condition.value, 'u').test(value);
    case 'starts_with':
      return typeof value === 'string' ? value.startsWith(condition.value) : undefined;
    case 'outside_folder':
      return typeof value === 'string' ? outsideFolder(value, condition.value) : undefined;
  }
}

/**
 * Whether a condition is met by a call's arguments. An argument that is missing, or not of the type the
 * condition reads, meets it: a policy that cannot tell errs on asking.
 */
export const conditionMet = (condition: ApprovalCondition, args: Record<string, unknown>): boolean =>
  metBy(condition, args[condition.argument]) ?? true;

/** A call's arguments as the model wrote them (JSON text); undefined when they are no JSON object. */
function parsedArguments(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text || '{}');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a call with these arguments (JSON text) waits under `rule`: always without conditions, else
 * when any is met. Arguments that are no JSON object wait.
 */
export function waitsUnder(rule: ApprovalRule, argumentsText: string): boolean {
  if (!rule.when?.length) return true;
  const args = parsedArguments(argumentsText);
  return !args || rule.when.some((condition) => conditionMet(condition, args));
}

/** The smallest of the numbers given, if any. */
const smallest = (values: (number | null | undefined)[]): number | undefined => {
  const given = values.filter((v): v is number => typeof v === 'number');
  return given.length ? Math.min(...given) : undefined;
};

/**
 * How long the waiting calls' own policies let them wait, and when they want a reminder: the smallest
 * of their rules' settings (undefined: the run's or the agent's timeout, and no reminder).
 */
export function waitSettings(
  rules: ApprovalRule[],
  waitingTools: string[],
): { timeoutSeconds?: number; reminderSeconds?: number } {
  const theirs = rules.filter((rule) => waitingTools.includes(rule.tool_name));
  return {
    timeoutSeconds: smallest(theirs.map((rule) => rule.approval_timeout_seconds)),
    reminderSeconds: smallest(theirs.map((rule) => rule.reminder_after_seconds)),
  };
}

/** A call of a reply, with its arguments as the model wrote them. */
interface ReplyCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * The ids of the calls that wait: a client tool's always (the request's, from its run), a call of one
 * of `approvalTools` when a rule of its tool says so (or when it has none: a turn that passes no rules
 * pauses by name).
 */
export function waitingCallIds(
  calls: ReplyCall[],
  waiting: { approvalTools: string[]; clientTools: { name: string }[]; rules: ApprovalRule[] },
): string[] {
  const waits = (call: ReplyCall) => {
    if (waiting.clientTools.some((tool) => tool.name === call.name)) return true;
    if (!waiting.approvalTools.includes(call.name)) return false;
    const rules = waiting.rules.filter((rule) => rule.tool_name === call.name);
    return rules.length === 0 || rules.some((rule) => waitsUnder(rule, call.arguments));
  };
  return calls.filter(waits).map((call) => call.id);
}
