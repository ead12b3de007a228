/** The turn's decisions (contracts/turn-decisions.ts), each called as a plain function, without Temporal. */
import {
  afterCalls,
  afterReply,
  modelChoices,
  replyEndsRun,
  waitingCalls,
  waitingTools,
} from '../contracts/turn-decisions';
import type { StepReply, ToolOutcome, TurnTool } from '../contracts/payloads';
import type { ToolRule } from '../src/schemas/tool-rules';

const tool = (name: string, mode: TurnTool['mode'] = 'sandbox'): TurnTool => ({
  id: name,
  name,
  mode,
  parallel: false,
  version: 1,
});
const tools = [tool('search'), tool('send_email'), tool('pick_file', 'client'), tool('finish')];
const noUsage = { promptTokens: 0, completionTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };
const reply = (calls: string[], more: Partial<StepReply> = {}): StepReply => ({
  messageId: 'message-1',
  stepId: 'step-1',
  toolCalls: calls.map((name, i) => ({ id: `call_${i}`, name })),
  finishReason: calls.length ? 'tool_calls' : 'stop',
  usage: noUsage,
  ...more,
});
const done: ToolOutcome = { status: 'success', output: 'ok' };

describe('modelChoices', () => {
  it('lets the model call any tool when no rule constrains it', () => {
    const choices = modelChoices([], tools, [], 0, 5);
    expect(choices).toEqual({
      allowedTools: tools.map((t) => t.name),
      toolChoice: 'auto',
      owedTools: [],
    });
  });

  it('forces the first call of a run_first rule by name', () => {
    const rules: ToolRule[] = [{ type: 'run_first', tool_name: 'search' }];
    expect(modelChoices(rules, tools, [], 0, 5)).toMatchObject({
      allowedTools: ['search'],
      toolChoice: { name: 'search' },
    });
  });

  it('owes the required tools before the last step, and nothing at it', () => {
    const rules: ToolRule[] = [{ type: 'required_before_exit', tool_name: 'finish' }];
    expect(modelChoices(rules, tools, [{ name: 'search' }], 1, 3).owedTools).toEqual(['finish']);
    expect(modelChoices(rules, tools, [{ name: 'search' }], 2, 3).owedTools).toEqual([]);
    expect(modelChoices(rules, tools, [{ name: 'finish' }], 1, 3).owedTools).toEqual([]);
  });
});

describe('waitingTools', () => {
  it('holds the client’s tools and those that need approval, not the others', () => {
    const rules: ToolRule[] = [{ type: 'requires_approval', tool_name: 'send_email' }];
    expect(waitingTools(tools, rules).sort()).toEqual(['pick_file', 'send_email']);
    expect(waitingTools(tools, [])).toEqual(['pick_file']);
  });
});

describe('replyEndsRun', () => {
  it('ends the run with a final reply only when the turn said so before the call', () => {
    expect(replyEndsRun(reply([]), true)).toBe(true);
    expect(replyEndsRun(reply([]), false)).toBe(false);
    expect(replyEndsRun(reply([]), undefined)).toBe(false);
    expect(replyEndsRun(reply(['search']), true)).toBe(false);
  });
});

describe('waitingCalls', () => {
  it('takes the calls the model call found waiting by their arguments', () => {
    const decided = reply(['send_email', 'send_email'], { waitingCallIds: ['call_1'] });
    expect(waitingCalls(decided, ['send_email'])).toEqual([{ id: 'call_1', name: 'send_email' }]);
    expect(waitingCalls({ ...decided, waitingCallIds: [] }, ['send_email'])).toEqual([]);
  });

  it('takes the calls of the waiting tools in a reply recorded before calls were decided by arguments', () => {
    expect(waitingCalls(reply(['search', 'send_email']), ['send_email'])).toEqual([
      { id: 'call_1', name: 'send_email' },
    ]);
  });
});

describe('afterReply', () => {
  it('ends the request on a final reply, with its stop reason, the run ended when the call ended it', () => {
    expect(afterReply(reply([]), [], [])).toEqual({ next: 'end', stopReason: 'end_turn', runEnded: false });
    expect(
      afterReply(reply([], { finishReason: 'length', stopReason: 'max_tokens_exceeded' }), [], []),
    ).toEqual({
      next: 'end',
      stopReason: 'max_tokens_exceeded',
      runEnded: true,
    });
  });

  it('alerts the model when a final reply leaves required tools uncalled', () => {
    expect(afterReply(reply([]), [], ['finish'])).toEqual({ next: 'alert', owedTools: ['finish'] });
  });

  it('pauses for the calls that wait, and runs a reply none of whose calls wait', () => {
    expect(afterReply(reply(['search', 'pick_file']), ['pick_file'], [])).toEqual({
      next: 'pause',
      calls: [{ id: 'call_1', name: 'pick_file' }],
    });
    expect(afterReply(reply(['search']), ['pick_file'], ['finish'])).toEqual({
      next: 'run',
      calls: [{ id: 'call_0', name: 'search' }],
    });
  });
});

describe('afterCalls', () => {
  const calls = [
    { id: 'call_0', name: 'search' },
    { id: 'call_1', name: 'finish' },
  ];
  const never = () => {
    throw new Error('asked without an eliciting call');
  };

  it('goes on to the next step, counting every call made', () => {
    const rules: ToolRule[] = [];
    expect(afterCalls(calls, [done, done], rules, never)).toEqual({
      next: { next: 'step' },
      made: [
        { name: 'search', output: 'ok' },
        { name: 'finish', output: 'ok' },
      ],
    });
  });

  it('ends the request when a call is terminal by the rules', () => {
    const rules: ToolRule[] = [{ type: 'exit_loop', tool_name: 'finish' }];
    expect(afterCalls(calls, [done, done], rules, never).next).toEqual({
      next: 'end',
      stopReason: 'tool_rule',
    });
  });

  it('pauses for a call its MCP server asks a question in, which is not yet made', () => {
    const asking: ToolOutcome = { status: 'success', waitsFor: 'elicitation' };
    const rules: ToolRule[] = [{ type: 'exit_loop', tool_name: 'finish' }];
    expect(afterCalls(calls, [asking, done], rules, () => true)).toEqual({
      next: { next: 'elicitation', calls: [calls[0]] },
      made: [{ name: 'finish', output: 'ok' }],
    });
    // A history from before such pauses ends by the rules instead.
    expect(afterCalls(calls, [asking, done], rules, () => false).next).toEqual({
      next: 'end',
      stopReason: 'tool_rule',
    });
  });
});
