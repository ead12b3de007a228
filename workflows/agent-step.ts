/**
 * One agent step (one `messages.create`): model call → tool calls → loop, until a stop reason.
 * Every model call and tool call is an activity; this code only decides, so the history holds ids and
 * short summaries. Deterministic: no I/O, no clocks, no randomness here.
 *
 * A call to a client-side tool, or to a tool that needs approval, pauses the step: the run of the
 * request ends with `requires_approval` and the workflow waits on the `approvalAnswered` signal, for
 * as long as it takes. The answer comes with a new request (a new run), under which the step goes on.
 */
import {
  CancellationScope,
  condition,
  isCancellation,
  log,
  patched,
  setCurrentDetails,
  setHandler,
  setWorkflowOptions,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type {
  AgentStepInput,
  AgentStepResult,
  ApprovalAnswered,
  ClientTool,
  ModelTurn,
  StepContext,
  StepTool,
  ToolOutcome,
  StepCall,
} from '../contracts/payloads';
import { approvalAnsweredSignal } from '../contracts/messages';
import { stopReasonKey } from '../contracts/search-attributes';
import { addUsage, noUsage } from '../contracts/usage';
import { finalReplyStopReason } from '../contracts/stop-reasons';
import { finishRequest, stepActivities, stopFor, type RequestOutcome } from './step-activities';
import { dispatchToolCall, runsOnClient, runToolCalls, withClientTools } from './tool-executors';
import {
  allowedTools,
  approvalRequiredTools,
  constraintViolation,
  isTerminal,
  mustCallTool,
  prefilledArgs,
  requiredToolAlert,
  uncalledRequiredTools,
  type ToolCallRecord,
} from '../contracts/tool-rules';

/** One request's share of the step: its run, and what it asked for. */
interface Request {
  runId: string;
  maxSteps: number;
  clientTools: ClientTool[];
  /** Whether the request streams tokens (`stream_tokens`). */
  streamTokens?: boolean;
  /** The answer this request brought to a paused step. */
  answer?: ApprovalAnswered;
  /** Its tools and rules, as they came with it (AgentStepInput.context, ApprovalAnswered.context). */
  context: StepContext;
}

/**
 * The model call whose reply ends the request ends its run too, in the transaction that stores the
 * reply: no activity after it, so a plain step is one model call (bench/where-the-time-goes.md).
 * Histories recorded without this patch run `finishRun` after it, and replay so.
 */
const MODEL_CALL_ENDS_RUN = 'model-call-ends-run';

export async function agentStep(input: AgentStepInput): Promise<AgentStepResult> {
  const { agentId, limits } = input;
  const acts = stepActivities(limits, { sandbox: input.sandboxTaskQueue, mcp: input.mcpTaskQueue });

  // Answers by the approval request they answer; the first one counts (a client's retry repeats it).
  // Kept whenever they come: after a worker crash, the signal can be delivered in the same activation
  // as the result of the activity that entered the pause, before the code below has reached the wait.
  const answers = new Map<string, ApprovalAnswered>();
  setHandler(approvalAnsweredSignal, (received) => {
    if (!answers.has(received.requestMessageId)) answers.set(received.requestMessageId, received);
  });

  const runTool = (
    call: StepCall,
    tool: StepTool | undefined,
    turn: Pick<ModelTurn, 'messageId' | 'stepId'>,
    runId: string,
    prefilled?: Record<string, unknown>,
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
    return dispatchToolCall(acts.runTool, callInput, tool, (reason) =>
      acts.run.rejectToolCall({ agentId, runId, toolCallId: call.id, toolName: call.name, reason }),
    );
  };

  /** Runs one request's model → tools loop; an answer to a pause first runs the calls it allows. */
  const runRequest = async (request: Request): Promise<RequestOutcome> => {
    const { runId } = request;
    const outcome: RequestOutcome = { stopReason: 'end_turn', usage: noUsage(), pendingToolCallIds: [] };
    const history: ToolCallRecord[] = [];
    try {
      const { context } = request;
      const rules = context.toolRules;
      const available = context.tools.map((t) => t.name);
      const tools = () => withClientTools(request.clientTools, context.tools);
      const toolOf = (name: string) => tools().find((t) => t.name === name);
      const approvalTools = () => [
        ...tools()
          .filter(runsOnClient)
          .map((t) => t.name),
        ...approvalRequiredTools(rules),
      ];

      if (request.answer) {
        const plan = await acts.run.applyApprovalAnswer({
          agentId,
          runId,
          approvalMessageId: request.answer.approvalMessageId,
        });
        request.maxSteps = plan.maxSteps;
        request.clientTools = plan.clientTools;
        request.streamTokens = plan.streamTokens;
        // Set before the calls run: should they fail or be cancelled, the run's end still stores a
        // return for each call of the reply.
        outcome.pendingToolCallIds = plan.callIds;
        outcome.followUpsFrom = request.answer.approvalMessageId;
        const outcomes = await runToolCalls(plan.toRun, context.tools, (call) =>
          runTool(call, toolOf(call.name), plan, runId),
        );
        plan.toRun.forEach((call, i) => history.push({ name: call.name, output: outcomes[i].output }));
        if (plan.toRun.some((call) => isTerminal(rules, call.name)))
          return { ...outcome, stopReason: 'tool_rule' };
      }

      for (let step = 0; step < request.maxSteps; step++) {
        const allowed = allowedTools(rules, available, history);
        const forced = mustCallTool(rules, history);
        // A reply without calls ends the request unless required tools are still to be called.
        const uncalled = uncalledRequiredTools(rules, available, history);
        const alertsIfFinal = uncalled.length > 0 && step + 1 < request.maxSteps;
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
              clientTools: request.clientTools,
              approvalTools: approvalTools(),
              pendingToolCallIds: outcome.pendingToolCallIds,
              followUpsFrom: outcome.followUpsFrom,
              requestUsage: outcome.usage,
              streamTokens: request.streamTokens,
              endsRunWhenFinal: !alertsIfFinal && patched(MODEL_CALL_ENDS_RUN),
            },
          ],
        );
        outcome.usage = addUsage(outcome.usage, turn.usage);
        outcome.pendingToolCallIds = [];
        outcome.followUpsFrom = undefined;

        if (turn.toolCalls.length === 0) {
          if (alertsIfFinal) {
            await acts.run.appendUserMessage({ agentId, runId, step, text: requiredToolAlert(uncalled) });
            continue;
          }
          const stopReason = finalReplyStopReason(turn.finishReason);
          return { ...outcome, stopReason, runEnded: turn.stopReason !== undefined };
        }

        const waiting = turn.toolCalls.filter((call) => approvalTools().includes(call.name));
        if (waiting.length) {
          return {
            ...outcome,
            stopReason: 'requires_approval',
            pause: { messageId: turn.messageId, calls: waiting, wait: turn.approvalWait },
          };
        }

        outcome.pendingToolCallIds = turn.toolCalls.map((call) => call.id);
        const outcomes = await runToolCalls(turn.toolCalls, context.tools, (call) => {
          if (!allowed.includes(call.name)) {
            return acts.run.rejectToolCall({
              agentId,
              runId,
              toolCallId: call.id,
              toolName: call.name,
              reason: constraintViolation(rules, call.name, allowed, history),
            });
          }
          const prefilled = prefilledArgs(rules, call.name, history);
          return runTool(call, toolOf(call.name), turn, runId, prefilled);
        });
        turn.toolCalls.forEach((call, i) => history.push({ name: call.name, output: outcomes[i].output }));
        if (turn.toolCalls.some((call) => isTerminal(rules, call.name)))
          return { ...outcome, stopReason: 'tool_rule' };
      }
      return { ...outcome, stopReason: 'max_steps' };
    } catch (error) {
      if (isCancellation(error)) return { ...outcome, stopReason: 'cancelled' };
      const { stopReason, error: failure } = stopFor(error);
      log.warn('agent step failed', { stopReason, error: failure.message });
      return { ...outcome, stopReason, error: failure };
    }
  };

  /** Waits for the answer to a pause; when the approval timeout passes first, the calls are denied. */
  const waitForAnswer = async (pause: NonNullable<RequestOutcome['pause']>, timeoutMs: number | null) => {
    const answered = () => answers.has(pause.messageId);
    if (timeoutMs !== null && !(await condition(answered, Math.max(timeoutMs, 1)))) {
      const expired = await acts.run.expireApproval({ agentId, messageId: pause.messageId });
      if (expired && !answered()) answers.set(pause.messageId, expired);
    }
    await condition(answered);
    return answers.get(pause.messageId)!;
  };

  const finish = (runId: string, outcome: RequestOutcome) => finishRequest(acts, agentId, runId, outcome);

  let request: Request = {
    runId: input.runId,
    maxSteps: limits.maxSteps,
    clientTools: input.clientTools,
    streamTokens: input.streamTokens,
    context: input.context,
  };
  for (;;) {
    const outcome = await runRequest(request);
    if (!outcome.pause) return finish(request.runId, outcome);

    // The model call ended the run as it stored the reply that waits; the workflow says so from the
    // task that receives the reply on (within milliseconds, but after the API may have answered).
    const { pause } = outcome;
    setCurrentDetails(`Waiting for approval of ${pause.calls.map((c) => `${c.name} (${c.id})`).join(', ')}`);
    upsertSearchAttributes([{ key: stopReasonKey, value: 'requires_approval' }]);
    const timeoutMs = pause.wait?.timeoutMs ?? null;

    let answered: ApprovalAnswered;
    try {
      answered = await waitForAnswer(pause, timeoutMs);
    } catch (error) {
      if (!isCancellation(error)) throw error;
      // Cancel while paused: Letta denies every pending call and the run ends cancelled.
      const answeredRun = await CancellationScope.nonCancellable(() =>
        acts.run.denyOnCancel({ agentId, runId: request.runId, messageId: pause.messageId }),
      );
      const cancelled = { stopReason: 'cancelled', usage: outcome.usage, pendingToolCallIds: [] };
      if (answeredRun) await finish(answeredRun, { ...cancelled, usage: noUsage() });
      return finish(request.runId, cancelled);
    }
    request = {
      runId: answered.runId,
      maxSteps: limits.maxSteps,
      clientTools: [],
      answer: answered,
      context: answered.context,
    };
  }
}

/**
 * Worker versioning (README "Upgrades"): AUTO_UPGRADE. A step paused for approval or a client tool
 * waits for weeks, across releases; pinned, it could only be answered by the release that started it,
 * and a server replaced in place (`npm start`) leaves none behind. The answer's workflow task runs on
 * the current release, which replays the step's history: test/replay.test.ts checks that for every
 * committed history, and a change that cannot replay goes behind patched().
 */
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, agentStep);
