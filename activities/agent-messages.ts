/**
 * Messages to other agents: the `agent` execution mode (Letta's multi-agent tools). Each message is a
 * turn of the recipient's own, queued in its session (src/agent/agent-messages.ts); the call waits for
 * the replies it asks for, heartbeating, up to AGENT_MESSAGE_TIMEOUT_MS.
 */
import type { TurnServices } from '../src/agent/turns';
import {
  awaitRuns,
  recipient,
  replyTexts,
  sendAgentMessage,
  taggedRecipients,
  type AgentMessage,
  type Delivery,
} from '../src/agent/agent-messages';
import { DomainError } from '../src/errors';
import { pythonRepr } from '../src/agent/tool-returns';
import { ToolError } from '../src/tools/tool-error';
import { toolCallActivity, type ToolCall, type ToolExecutor } from './tool-call';
import type { AgentMessageActivities } from '../contracts/activities';

const strings = (value: unknown) => (Array.isArray(value) ? value.map(String) : []);

export function agentMessageExecutor(services: TurnServices): ToolExecutor {
  const timeoutMs = services.config.AGENT_MESSAGE_TIMEOUT_MS;

  /** Each delivery's reply, once its run has stopped; a run still going at the deadline is an error. */
  const replies = async (deliveries: Delivery[], signal: AbortSignal) => {
    const runIds = deliveries.flatMap((d) => ('runId' in d ? [d.runId] : []));
    const runs = await awaitRuns(services, runIds, Date.now() + timeoutMs, signal);
    return Promise.all(
      deliveries.map(async (d) => {
        if ('error' in d) return { agent_id: d.agentId, error: d.error };
        const run = runs.get(d.runId);
        if (run && (run.status === 'created' || run.status === 'running'))
          return { agent_id: d.agentId, error: `no reply within ${timeoutMs / 1000} seconds` };
        return { agent_id: d.agentId, response: await replyTexts(services, run) };
      }),
    );
  };

  const send = async ({ input, agent, args, signal }: ToolCall): Promise<string> => {
    if (typeof args.message !== 'string') throw new ToolError("missing or invalid argument 'message'");
    const message: AgentMessage = {
      senderId: agent.id,
      runId: input.runId,
      toolCallId: input.toolCallId,
      text: args.message,
      wait: input.toolName !== 'send_message_to_agent_async',
    };
    if (input.toolName === 'send_message_to_agents_matching_tags') {
      const recipients = await taggedRecipients(
        services,
        agent.id,
        strings(args.match_all),
        strings(args.match_some),
      );
      const answers = await replies(await sendAgentMessage(services, message, recipients), signal);
      return pythonRepr(
        answers.map((a) => ('error' in a ? { agent_id: a.agent_id, response: [`<error: ${a.error}>`] } : a)),
      );
    }
    const [delivery] = await sendAgentMessage(services, message, [
      await recipient(services, args.other_agent_id),
    ]);
    if ('error' in delivery) throw new ToolError(delivery.error);
    if (!message.wait) return 'Successfully sent message';
    const [answer] = await replies([delivery], signal);
    if ('error' in answer) throw new ToolError(answer.error!);
    return pythonRepr(answer);
  };

  return {
    async execute(call) {
      try {
        return { status: 'success', text: await send(call) };
      } catch (error) {
        if (error instanceof DomainError) throw new ToolError(error.message);
        throw error;
      }
    },
  };
}

export function agentMessageActivities(services: TurnServices) {
  return {
    messageAgents: toolCallActivity(services.db, agentMessageExecutor(services)),
  } satisfies AgentMessageActivities;
}
