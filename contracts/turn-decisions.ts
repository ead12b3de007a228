/**
 * The decisions of an agent turn, as pure functions: which tools the model may call, whether its
 * reply ends the run, which of its calls wait for an answer, and whether the calls that ran pause or
 * end the request. `agentTurn` (workflows/agent-turn.ts) makes each by name; the model activity
 * (activities/model.ts) applies the two it records with the reply (the run's end, the calls that wait)
 * with the same functions, in the transaction that stores the reply.
 */
import type { ToolRule } from './tool-rules';
import type { CallModelInput, StepCall, StepReply, ToolOutcome, TurnTool } from './payloads';
import { finalReplyStopReason } from './stop-reasons';
import { runsOnClientMode } from './tool-modes';
import {
  allowedTools,
  approvalRequiredTools,
  isTerminal,
  mustCallTool,
  uncalledRequiredTools,
  type ToolCallRecord,
} from './tool-rules';

/** What the model may call at a step, and what a reply without calls would still owe. */
export interface ModelChoices {
  allowedTools: string[];
  toolChoice: CallModelInput['toolChoice'];
  /**
   * Required tools not yet called: a reply without calls is answered with an alert to call them and
   * the request goes on (empty at its last step, where such a reply ends it).
   */
  owedTools: string[];
}

/** The tool rules' choices for the model call of step `step` of a request of `maxSteps`. */
export function modelChoices(
  rules: ToolRule[],
  tools: TurnTool[],
  history: ToolCallRecord[],
  step: number,
  maxSteps: number,
): ModelChoices {
  const available = tools.map((t) => t.name);
  const allowed = allowedTools(rules, available, history);
  const forced = mustCallTool(rules, history);
  const uncalled = uncalledRequiredTools(rules, available, history);
  return {
    allowedTools: allowed,
    toolChoice: forced ? (allowed.length === 1 ? { name: allowed[0] } : 'required') : 'auto',
    owedTools: step + 1 < maxSteps ? uncalled : [],
  };
}

/**
 * The tools whose calls wait for an answer: the client's, which it runs and returns, and those the
 * rules say need a person's approval. (`CallModelInput.approvalTools` in the payload, which histories
 * record under that name.)
 */
export const waitingTools = (tools: TurnTool[], rules: ToolRule[]): string[] => [
  ...tools.filter((t) => runsOnClientMode(t.mode)).map((t) => t.name),
  ...approvalRequiredTools(rules),
];

/** Whether a reply ends its run as it is stored: a final reply, when the turn said so before the call. */
export const replyEndsRun = (reply: Pick<StepReply, 'toolCalls'>, endsRunWhenFinal: boolean | undefined) =>
  endsRunWhenFinal === true && reply.toolCalls.length === 0;

/**
 * The calls of a reply that wait for an answer: those the model call found waiting by their arguments,
 * or, in replies recorded before it did, those of the waiting tools.
 */
export const waitingCalls = (reply: Pick<StepReply, 'toolCalls' | 'waitingCallIds'>, waiting: string[]) =>
  reply.toolCalls.filter((call) =>
    reply.waitingCallIds ? reply.waitingCallIds.includes(call.id) : waiting.includes(call.name),
  );

/** What follows a model's reply. */
export type AfterReply =
  /** The request ends; `runEnded` when the model call stored the run's end with the reply. */
  | { next: 'end'; stopReason: string; runEnded: boolean }
  /** A reply without calls while required tools are owed: the model is told to call them. */
  | { next: 'alert'; owedTools: string[] }
  /** The run pauses for the answer to these calls. */
  | { next: 'pause'; calls: StepCall[] }
  /** The reply's calls run. */
  | { next: 'run'; calls: StepCall[] };

/** What the turn does with a model's reply, given the tools whose calls wait and what is owed. */
export function afterReply(reply: StepReply, waiting: string[], owedTools: string[]): AfterReply {
  if (reply.toolCalls.length === 0) {
    if (owedTools.length) return { next: 'alert', owedTools };
    const stopReason = finalReplyStopReason(reply.finishReason);
    return { next: 'end', stopReason, runEnded: reply.stopReason !== undefined };
  }
  const paused = waitingCalls(reply, waiting);
  if (paused.length) return { next: 'pause', calls: paused };
  return { next: 'run', calls: reply.toolCalls };
}

/** What follows the calls of a reply that ran. */
export type AfterCalls =
  /** Calls whose MCP servers asked the user something: the run pauses for the answers. */
  | { next: 'elicitation'; calls: StepCall[] }
  /** A call of a tool that is terminal by the rules ended the request. */
  | { next: 'end'; stopReason: 'tool_rule' }
  | { next: 'step' };

/**
 * What the turn does once a reply's calls ran, and the calls the tool rules count as made (a call
 * waiting for its MCP server's question has no return yet). `pausesForElicitation` says whether the
 * turn's history pauses for such calls (asked only when there are some: it may be `patched()`).
 */
export function afterCalls(
  calls: StepCall[],
  outcomes: ToolOutcome[],
  rules: ToolRule[],
  pausesForElicitation: () => boolean,
): { next: AfterCalls; made: ToolCallRecord[] } {
  const made = calls.flatMap((call, i) =>
    outcomes[i].waitsFor ? [] : [{ name: call.name, output: outcomes[i].output }],
  );
  const eliciting = calls.filter((_, i) => outcomes[i].waitsFor === 'elicitation');
  if (eliciting.length && pausesForElicitation())
    return { next: { next: 'elicitation', calls: eliciting }, made };
  if (calls.some((call) => isTerminal(rules, call.name)))
    return { next: { next: 'end', stopReason: 'tool_rule' }, made };
  return { next: { next: 'step' }, made };
}
