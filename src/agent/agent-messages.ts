/**
 * Letta's multi-agent tools (functions/function_sets/multi_agent.py): a message to another agent is a
 * turn of that agent's own, queued in its session behind its other messages (an Update to that
 * session's workflow), under a run whose id follows from the tool call and the recipient, so a call
 * that runs again after a crash finds its messages sent and does not send them twice. Waiting for a
 * reply that could never come is refused: the run remembers the chain of agents waiting on it.
 */
import { createHash } from 'node:crypto';
import { getAgentRow, agentsMatchingTags } from '../db/agents';
import { runMessagesAfter } from '../db/messages';
import { getRun, isActiveRun } from '../db/runs';
import type { RunRow } from '../db/rows';
import { conflict, DomainError, invalid } from '../errors';
import type { Queryable } from '../db';
import { contentText } from '../memory/context';
import { runLiveness, startAgentTurn, type TurnServices } from './turns';
import type { AgentMessageDelivery } from '../../contracts/payloads';

/** Letta's limit on the agents one tag-matched message reaches (its `agents.list(limit=100)`). */
const MAX_TAG_RECIPIENTS = 100;
const POLL_MS = 250;

export interface AgentMessage {
  /** The agent that sends, and the run and tool call that send it. */
  senderId: string;
  runId: string;
  toolCallId: string;
  text: string;
  /** Whether the sender waits for the reply. */
  wait: boolean;
  /** The workflow that waits for the reply (an agent message's call), which the recipient's turn signals. */
  replyTo?: string;
}

/** Letta's framing of the message, which tells the recipient who sent it. */
export function framedMessage({ senderId, text, wait }: AgentMessage): string {
  if (!wait)
    return `[Incoming message from agent with ID '${senderId}' - this is a one-way notification; if you need to respond, use an agent-to-agent messaging tool if available] ${text}`;
  const body = text.toLowerCase() === text ? text : `${text}\n${text.toLowerCase()}`;
  return `[Incoming message from agent with ID '${senderId}' - your response will be delivered to the sender] ${body}`;
}

/** The run of the message to `recipient`: the same for the same call, every time it is asked. */
export function messageRunId(toolCallId: string, recipient: string): string {
  const hex = createHash('sha256').update(`${toolCallId}\n${recipient}`).digest('hex');
  const variant = ((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
  return `run-${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * What a message's run remembers of how it came: every agent the messages passed through (`hops`), and
 * those of them still waiting, one on the next, for its reply (`waiting`); outermost first.
 */
interface Chain {
  hops: string[];
  waiting: string[];
}

const listOf = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : []);

function chainOf(run: RunRow | undefined, message: Pick<AgentMessage, 'senderId' | 'wait'>): Chain {
  const hops = [...listOf(run?.metadata?.agent_chain), message.senderId];
  const waiting = message.wait ? [...listOf(run?.metadata?.waiting_chain), message.senderId] : [];
  return { hops, waiting };
}

/**
 * The recipients of a tag-matched message: every tag of `all`, one of `some` (when it names any),
 * never the sender (Letta's rule).
 */
export async function taggedRecipients(
  services: TurnServices,
  senderId: string,
  all: string[],
  some: string[],
) {
  const ids = await agentsMatchingTags(services.db, all, some, MAX_TAG_RECIPIENTS + 1);
  return ids.filter((id) => id !== senderId).slice(0, MAX_TAG_RECIPIENTS);
}

/** Why a message to `recipient` may not be sent; undefined when it may. */
function refusal(
  chain: Chain,
  message: Pick<AgentMessage, 'senderId' | 'wait'>,
  recipient: string,
  maxDepth: number,
) {
  if (chain.hops.length > maxDepth)
    return `agents have messaged each other ${maxDepth} deep (${chain.hops.join(' → ')}): AGENT_MESSAGE_MAX_DEPTH stops the chain here`;
  if (recipient === message.senderId && message.wait)
    return 'an agent cannot wait for its own reply: its message would wait behind the turn that waits for it';
  if (chain.waiting.includes(recipient))
    return `agent ${recipient} is waiting for this agent's reply (${chain.waiting.join(' → ')}): waiting on it would never end`;
  return undefined;
}

/**
 * A message a sandboxed call sends through the API with its token (whose caller is `sender`): the
 * chain the recipient's turn continues, as the agent-to-agent tools' messages do, for the run's
 * metadata; a 409 when it may not be sent (it would wait on an agent that waits on it, or go too deep).
 */
export async function callerMessageChain(
  db: Queryable,
  maxDepth: number,
  sender: { agentId: string; runId: string | null },
  recipient: string,
  wait: boolean,
): Promise<Record<string, unknown>> {
  const message = { senderId: sender.agentId, wait };
  const chain = chainOf(sender.runId ? await getRun(db, sender.runId) : undefined, message);
  const refused = refusal(chain, message, recipient, maxDepth);
  if (refused) throw conflict(refused);
  return { agent_chain: chain.hops, waiting_chain: chain.waiting, sender_run_id: sender.runId };
}

/** Sends the message to each recipient as a turn of its own; what cannot be sent says why. */
export async function sendAgentMessage(
  services: TurnServices,
  message: AgentMessage,
  recipients: string[],
): Promise<AgentMessageDelivery[]> {
  const sender = await getRun(services.db, message.runId);
  const chain = chainOf(sender, message);
  return Promise.all(
    recipients.map(async (agentId): Promise<AgentMessageDelivery> => {
      const refused = refusal(chain, message, agentId, services.config.AGENT_MESSAGE_MAX_DEPTH);
      if (refused) return { agentId, error: refused };
      try {
        const { run } = await startAgentTurn(services, {
          agentId,
          conversationId: null,
          clientTools: [],
          maxSteps: services.config.AGENT_MESSAGE_MAX_STEPS,
          background: false,
          runType: 'agent_message',
          userMessages: [{ role: 'system', text: framedMessage(message) }],
          runId: messageRunId(message.toolCallId, agentId),
          metadata: { agent_chain: chain.hops, waiting_chain: chain.waiting, sender_run_id: message.runId },
          origin: `agent ${message.senderId} (turn ${sender?.workflow_id})`,
          replyTo: message.replyTo,
        });
        return { agentId, runId: run.id };
      } catch (error) {
        if (error instanceof DomainError) return { agentId, error: error.message };
        throw error;
      }
    }),
  );
}

/**
 * Waits until each run has stopped (ended or paused), or until `deadline`, looking every 250 ms: the
 * wait of turns recorded before agent messages waited in a workflow of their own.
 */
export async function awaitRuns(
  services: TurnServices,
  runIds: string[],
  deadline: number,
  signal?: AbortSignal,
): Promise<Map<string, RunRow | undefined>> {
  const runs = new Map<string, RunRow | undefined>();
  for (;;) {
    for (const id of runIds) runs.set(id, await getRun(services.db, id));
    const open = [...runs.values()].some((run) => run && isActiveRun(run));
    if (!open || Date.now() >= deadline) return runs;
    signal?.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * The runs of `runIds` that will not go on: stopped (ended or paused), gone, or left open by a turn that
 * no longer runs to end them (terminated in the Temporal UI). A run read open whose turn is then seen
 * closed has either just ended or never will: the turn stores its run's end before its workflow closes.
 */
export async function stoppedRuns(services: TurnServices, runIds: string[]): Promise<string[]> {
  const stopped = await Promise.all(
    runIds.map(async (id) => {
      const run = await getRun(services.db, id);
      return !run || !isActiveRun(run) || !(await runLiveness(services, run)());
    }),
  );
  return runIds.filter((_, i) => stopped[i]);
}

/** One recipient's answer, as Letta's tools give it: its reply, or why there is none. */
export type AgentReply = { agent_id: string; response: string[] } | { agent_id: string; error: string };

/**
 * What the recipient of `delivery` answered: its run's reply once the run has stopped; an error while
 * it still runs (`timeoutMs` passed), or when its turn ended without ending it. A run still open after
 * its turn is seen closed is never ended by it: the turn stores its run's end before it closes.
 */
export async function replyOf(
  services: TurnServices,
  delivery: AgentMessageDelivery,
  timeoutMs: number,
): Promise<AgentReply> {
  const agent_id = delivery.agentId;
  if ('error' in delivery) return { agent_id, error: delivery.error };
  let run = await getRun(services.db, delivery.runId);
  if (run && isActiveRun(run)) {
    if (await runLiveness(services, run)())
      return { agent_id, error: `no reply within ${timeoutMs / 1000} seconds` };
    run = await getRun(services.db, delivery.runId);
    if (run && isActiveRun(run))
      return { agent_id, error: `its turn ended without a reply (run ${run.id} was left ${run.status})` };
  }
  return { agent_id, response: await replyTexts(services, run) };
}

/** What the recipient answered in the run: its assistant messages' texts. */
async function replyTexts(services: TurnServices, run: RunRow | undefined): Promise<string[]> {
  if (!run) return ['<no response>'];
  const texts = (await runMessagesAfter(services.db, run.id, 0))
    .filter((m) => m.role === 'assistant')
    .map((m) => contentText(m.content))
    .filter(Boolean);
  return texts.length ? texts : ['<no response>'];
}

/** A known agent, or a 400 the tool turns into its error. */
export async function recipient(services: TurnServices, agentId: unknown): Promise<string> {
  if (typeof agentId !== 'string' || !agentId) throw invalid("missing or invalid argument 'other_agent_id'");
  if (!(await getAgentRow(services.db, agentId))) throw invalid(`Agent ${agentId} not found`);
  return agentId;
}
