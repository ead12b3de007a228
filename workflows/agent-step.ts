/**
 * One agent step (one `messages.create`): model call → tool calls → loop, until a stop reason.
 * Every model call and tool call is an activity; this code only decides, so the history holds ids and
 * short summaries. Deterministic: no I/O, no clocks, no randomness here.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  log,
  proxyActivities,
  setCurrentDetails,
  upsertSearchAttributes,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { ModelTurn, StepContext, StepTool, ToolOutcome, TokenUsage } from '../activities/contracts';
import type { AgentStepError, AgentStepInput, AgentStepLimits, AgentStepResult } from './messages';
import { stopReasonKey } from './search-attributes';
import {
  allowedTools,
  constraintViolation,
  isTerminal,
  mustCallTool,
  prefilledArgs,
  requiresApproval,
  uncalledRequiredTools,
  type ToolCallRecord,
} from './tool-rules';

type Activities = ReturnType<typeof createActivities>;

const REQUIRED_TOOL_ALERT = (names: string[]) =>
  `[This is an automated system message hidden from the user] ToolRuleViolated: You must call ${names.join(', ')} at least once to exit the loop.`;

function activityProxies(limits: AgentStepLimits) {
  const bookkeeping: ActivityOptions = {
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds', maximumAttempts: 20 },
  };
  const model: ActivityOptions = {
    startToCloseTimeout: limits.modelTimeoutMs + 10_000,
    heartbeatTimeout: '20 seconds',
    retry: {
      initialInterval: limits.modelRetryInitialMs,
      backoffCoefficient: 2,
      maximumInterval: '60 seconds',
      maximumAttempts: limits.modelMaxAttempts,
    },
  };
  const tool: ActivityOptions = {
    startToCloseTimeout: limits.toolTimeoutMs + 10_000,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: limits.toolMaxAttempts },
  };
  // Calls that name themselves in the Temporal UI pass these options again with a summary.
  return {
    run: proxyActivities<Activities>(bookkeeping),
    model: proxyActivities<Activities>(model),
    modelOptions: model,
    tool: proxyActivities<Activities>(tool),
    toolOptions: tool,
  };
}

const addUsage = (total: TokenUsage, more: TokenUsage): TokenUsage => ({
  promptTokens: total.promptTokens + more.promptTokens,
  completionTokens: total.completionTokens + more.completionTokens,
  cachedInputTokens: total.cachedInputTokens + more.cachedInputTokens,
  reasoningTokens: total.reasoningTokens + more.reasoningTokens,
});

function describe(error: unknown): string {
  const cause = error instanceof ActivityFailure ? error.cause : undefined;
  return `${(error as Error)?.message ?? String(error)}${cause ? `: ${cause.message}` : ''}`;
}

/** Longest error message kept in the workflow's result (the history stays small). */
const ERROR_MESSAGE_CHARS = 500;

/** A failure's stop reason and Letta error: the model provider's refusal, or an error of ours. */
function stopFor(error: unknown): { stopReason: string; error: AgentStepError } {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  const message = describe(error).slice(0, ERROR_MESSAGE_CHARS);
  if (cause instanceof ApplicationFailure && cause.type === 'LlmApiError') {
    const type = typeof cause.details?.[0] === 'string' ? cause.details[0] : 'llm_error';
    return { stopReason: 'llm_api_error', error: { type, message } };
  }
  return { stopReason: 'error', error: { type: 'internal_error', message } };
}

export async function agentStep(input: AgentStepInput): Promise<AgentStepResult> {
  const { agentId, runId, limits } = input;
  const acts = activityProxies(limits);
  let usage: TokenUsage = { promptTokens: 0, completionTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };
  let stepCount = 0;
  let pendingToolCallIds: string[] = [];

  const loop = async (context: StepContext): Promise<string> => {
    const rules = context.toolRules;
    const available = context.tools.map((t) => t.name);
    const history: ToolCallRecord[] = [];
    for (let step = 0; step < limits.maxSteps; step++) {
      const allowed = allowedTools(rules, available, history);
      const forced = mustCallTool(rules, history);
      setCurrentDetails(`Waiting for the model (step ${step + 1})`);
      const turn: ModelTurn = await acts.model.callModel.executeWithOptions(
        { ...acts.modelOptions, summary: `model ${context.model}` },
        [
          {
            agentId,
            runId,
            step,
            allowedTools: allowed,
            toolChoice: forced ? (allowed.length === 1 ? { name: allowed[0] } : 'required') : 'auto',
            parallelToolCalls: context.parallelToolCalls,
            clientTools: input.clientTools,
            pendingToolCallIds,
          },
        ],
      );
      stepCount++;
      usage = addUsage(usage, turn.usage);
      pendingToolCallIds = [];

      if (turn.toolCalls.length === 0) {
        const uncalled = uncalledRequiredTools(rules, available, history);
        if (uncalled.length && step + 1 < limits.maxSteps) {
          await acts.run.appendUserMessage({ agentId, runId, step, text: REQUIRED_TOOL_ALERT(uncalled) });
          continue;
        }
        return turn.finishReason === 'length' ? 'max_tokens_exceeded' : 'end_turn';
      }

      const clientToolNames = input.clientTools.map((t) => t.name);
      if (
        turn.toolCalls.some(
          (call) => clientToolNames.includes(call.name) || requiresApproval(rules, call.name),
        )
      ) {
        // The durable pause that answers these arrives with client-side tools and approvals.
        return 'requires_approval';
      }

      const outcomes = await runToolCalls(turn, context.tools, (call) => {
        if (!allowed.includes(call.name)) {
          return acts.run.rejectToolCall({
            agentId,
            runId,
            toolCallId: call.id,
            toolName: call.name,
            reason: constraintViolation(rules, call.name, allowed, history),
          });
        }
        return runTool(
          call,
          context.tools.find((t) => t.name === call.name),
          turn,
          prefilledArgs(rules, call.name, history),
        );
      });
      pendingToolCallIds = turn.toolCalls.map((call) => call.id);
      turn.toolCalls.forEach((call, i) => history.push({ name: call.name, output: outcomes[i].output }));
      if (turn.toolCalls.some((call) => isTerminal(rules, call.name))) return 'tool_rule';
    }
    return 'max_steps';
  };

  const runTool = (
    call: { id: string; name: string },
    tool: StepTool | undefined,
    turn: ModelTurn,
    prefilled: Record<string, unknown> | undefined,
  ): Promise<ToolOutcome> => {
    const callInput = {
      agentId,
      runId,
      stepId: turn.stepId,
      messageId: turn.messageId,
      toolCallId: call.id,
      toolName: call.name,
      prefilledArgs: prefilled,
    };
    if (tool?.mode === 'builtin') {
      setCurrentDetails(`Running tool ${call.name} (built-in)`);
      return acts.tool.runBuiltinTool.executeWithOptions(
        { ...acts.toolOptions, summary: `${call.name} (built-in)` },
        [callInput],
      );
    }
    const reason = tool
      ? `Error executing function ${call.name}: NotImplementedError: tools of the ${tool.mode} execution mode cannot run on this server yet`
      : 'Tool not found';
    return acts.run.rejectToolCall({ agentId, runId, toolCallId: call.id, toolName: call.name, reason });
  };

  let stopReason: string;
  let failure: AgentStepError | undefined;
  try {
    const context = await acts.run.startRun({ agentId, runId });
    stopReason = await loop(context);
  } catch (error) {
    if (isCancellation(error)) {
      stopReason = 'cancelled';
    } else {
      ({ stopReason, error: failure } = stopFor(error));
      log.warn('agent step failed', { stopReason, error: failure.message });
    }
  }
  setCurrentDetails(`Stopped: ${stopReason}`);
  const result: AgentStepResult = {
    stopReason,
    ...(failure ? { error: failure } : {}),
    usage: { ...usage, stepCount },
  };
  await CancellationScope.nonCancellable(() =>
    acts.run.finishRun({
      agentId,
      runId,
      stopReason,
      usage: result.usage,
      pendingToolCallIds,
      error: failure,
    }),
  );
  upsertSearchAttributes([{ key: stopReasonKey, value: stopReason }]);
  return result;
}

/**
 * Runs one reply's tool calls: concurrently when every one of them allows parallel execution,
 * otherwise in order. Outcomes keep the calls' order.
 */
async function runToolCalls(
  turn: ModelTurn,
  tools: StepTool[],
  run: (call: { id: string; name: string }) => Promise<ToolOutcome>,
): Promise<ToolOutcome[]> {
  const parallel =
    turn.toolCalls.length > 1 &&
    turn.toolCalls.every((call) => tools.find((t) => t.name === call.name)?.parallel === true);
  if (parallel) return Promise.all(turn.toolCalls.map(run));
  const outcomes: ToolOutcome[] = [];
  for (const call of turn.toolCalls) outcomes.push(await run(call));
  return outcomes;
}
