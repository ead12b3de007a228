/**
 * Messages to other agents: the `agent` execution mode (Letta's multi-agent tools). Each message is a
 * turn of the recipient's own, queued in its session (src/agent/agent-messages.ts). A call is a child
 * workflow of its turn (workflows/agent-message-call.ts) whose steps are here: `sendAgentMessages`
 * sends, the workflow waits for the recipients' turns to signal, `lookAtMessageRuns` finds a turn that
 * died without signalling, and `recordAgentReplies` reads the replies and records the call's result.
 */
import { Context } from '@temporalio/activity';
import type { TurnServices } from '../src/agent/turns';
import {
  awaitRuns,
  recipient,
  replyOf,
  sendAgentMessage,
  stoppedRuns,
  taggedRecipients,
  type AgentMessage,
} from '../src/agent/agent-messages';
import { readToolCall } from '../src/db/tool-calls';
import { DomainError } from '../src/errors';
import { pythonRepr } from '../src/returns/tool-returns';
import { ToolError } from '../src/returns/tool-error';
import { argumentsOf, toolCallActivity, type ToolCall, type ToolExecutor } from './tool-call';
import { withHeartbeats } from './heartbeat';
import type { AgentMessageActivities, AgentMessageCallActivities } from '../contracts/activities';
import type { AgentMessagesSent, AgentRepliesInput, ToolCallInput } from '../contracts/payloads';

const strings = (value: unknown) => (Array.isArray(value) ? value.map(String) : []);

const TAGGED = 'send_message_to_agents_matching_tags';

/**
 * Sends the call's message to its recipients, each as a turn of its own, idempotent by the tool call
 * (src/agent/agent-messages.ts, messageRunId). A waiting call's recipients signal `replyTo` when their
 * runs stop. The call's own error (its arguments, an unknown recipient) sends nothing.
 */
async function send(
  services: TurnServices,
  { input, agent, args }: Pick<ToolCall, 'input' | 'agent' | 'args'>,
  replyTo?: string,
): Promise<AgentMessagesSent> {
  try {
    if (typeof args.message !== 'string') throw new ToolError("missing or invalid argument 'message'");
    const waits = input.toolName !== 'send_message_to_agent_async';
    const message: AgentMessage = {
      senderId: agent.id,
      runId: input.runId,
      toolCallId: input.toolCallId,
      text: args.message,
      wait: waits,
      ...(waits && replyTo ? { replyTo } : {}),
    };
    const recipients =
      input.toolName === TAGGED
        ? await taggedRecipients(services, agent.id, strings(args.match_all), strings(args.match_some))
        : [await recipient(services, args.other_agent_id)];
    const deliveries = await sendAgentMessage(services, message, recipients);
    const awaited = waits ? deliveries.flatMap((d) => ('runId' in d ? [d.runId] : [])) : [];
    return { deliveries, awaited };
  } catch (error) {
    if (error instanceof ToolError || error instanceof DomainError)
      return { deliveries: [], awaited: [], error: error.message };
    throw error;
  }
}

/**
 * The call's result as Letta's tools give it, once its recipients' runs have stopped (or `timeoutMs`
 * passed): their replies, or the tool's error.
 */
async function answer(
  services: TurnServices,
  toolName: string,
  sent: AgentMessagesSent,
  timeoutMs: number,
): Promise<string> {
  if (sent.error) throw new ToolError(sent.error);
  const replies = () => Promise.all(sent.deliveries.map((d) => replyOf(services, d, timeoutMs)));
  if (toolName === TAGGED)
    return pythonRepr(
      (await replies()).map((a) =>
        'error' in a ? { agent_id: a.agent_id, response: [`<error: ${a.error}>`] } : a,
      ),
    );
  const [delivery] = sent.deliveries;
  if ('error' in delivery) throw new ToolError(delivery.error);
  if (!sent.awaited.length) return 'Successfully sent message';
  const [reply] = await replies();
  if ('error' in reply) throw new ToolError(reply.error);
  return pythonRepr(reply);
}

/**
 * An executor whose result is `text`'s; a refusal of the core (a 4xx) is the tool's error. An attempt
 * that takes a call over follows on with what the interrupted one started: each message's run is named
 * by the call (messageRunId), so sending again sends nothing twice, and the replies read are the same.
 */
const executor = (text: (call: ToolCall) => Promise<string>): ToolExecutor => ({
  resumes: () => true,
  async execute(call) {
    try {
      return { status: 'success', text: await text(call) };
    } catch (error) {
      if (error instanceof DomainError) throw new ToolError(error.message);
      throw error;
    }
  },
});

export function agentMessageActivities(services: TurnServices) {
  const timeoutMs = services.config.AGENT_MESSAGE_TIMEOUT_MS;
  return {
    messageAgents: toolCallActivity(
      services.db,
      executor(async (call) => {
        const sent = await send(services, call);
        await awaitRuns(services, sent.awaited, Date.now() + timeoutMs, call.signal);
        return answer(services, call.input.toolName, sent, timeoutMs);
      }),
    ),

    async sendAgentMessages(input: ToolCallInput): Promise<AgentMessagesSent> {
      const read = await readToolCall(services.db, input, undefined);
      const { agent, tool } = read;
      // Nothing to send: `recordAgentReplies` gives the recorded result, or records what every tool
      // call records of a tool that is gone or arguments that are not JSON.
      const nothingSent = { deliveries: [], awaited: [] };
      if (read.done || !agent || !tool) return nothingSent;
      let args;
      try {
        args = argumentsOf(read, input, agent, tool);
      } catch (error) {
        if (error instanceof ToolError) return nothingSent;
        throw error;
      }
      const caller = Context.current().info.workflowExecution?.workflowId;
      return withHeartbeats(send(services, { input, agent, args }, caller));
    },

    lookAtMessageRuns: ({ runIds }: { runIds: string[] }) => stoppedRuns(services, runIds),

    recordAgentReplies: toolCallActivity(
      services.db,
      executor((call) => {
        // The activity is given the call with what was sent (AgentRepliesInput).
        const { sent, timeoutMs: waitedMs } = call.input as AgentRepliesInput;
        return answer(services, call.input.toolName, sent, waitedMs);
      }),
    ),
  } satisfies AgentMessageActivities & AgentMessageCallActivities;
}
