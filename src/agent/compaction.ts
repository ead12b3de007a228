/**
 * Compaction of a conversation (Letta's `compact`): the messages before its latest user turn leave the
 * model's context, and a summary of them, written by the agent's own model, takes their place. Nothing
 * is deleted: the messages stay listed and searchable (conversation_search), only the context shrinks.
 */
import { conflict, invalid } from '../errors';
import type { Queryable } from '../db';
import type { AgentRecord, MessageRow } from '../db/rows';
import type { ConversationRef } from '../db/conversations';
import { conversationContext, setContextWindow } from '../db/messages';
import { listRuns } from '../db/runs';
import { parseHandle } from '../llm';
import type { ModelProvider } from '../llm/types';
import { contentText } from '../memory/context';

/** Letta's summarizer instructions (prompts/gpt_summarize.py), with its word limit. */
const SUMMARIZER_PROMPT = `Your job is to summarize a history of previous messages in a conversation between an AI persona and a human.
The conversation you are given is a from a fixed context window and may not be complete.
Messages sent by the AI are marked with the 'assistant' role.
The AI 'assistant' can also make calls to tools, whose outputs can be seen in messages with the 'tool' role.
Things the AI says in the message content are considered inner monologue and are not seen by the user.
The only AI messages seen by the user are from when the AI uses 'send_message'.
Messages the user sends are in the 'user' role.
The 'user' role is also used for important system events, such as login events and heartbeat events (heartbeats run the AI's program without user action, allowing the AI to act without prompting from the user sending them a message).
Summarize what happened in the conversation from the perspective of the AI (use the first person).
Keep your summary less than 100 words, do NOT exceed this word limit.
Only output the summary, do NOT include anything else in your output.`;

export interface Compaction {
  summary: string;
  num_messages_before: number;
  num_messages_after: number;
}

/** One message as the summarizer reads it. */
function rendered(message: MessageRow): string {
  const calls = (message.tool_calls ?? []).map((call) => `${call.name}(${call.arguments})`).join(', ');
  const returns = (message.tool_returns ?? []).map((ret) => ret.func_response).join('\n');
  const text = [contentText(message.content), calls && `called ${calls}`, returns].filter(Boolean).join('\n');
  return `${message.role}: ${text}`;
}

export async function compactConversation(
  db: Queryable,
  providers: (provider: string) => ModelProvider,
  agent: AgentRecord,
  ref: ConversationRef,
): Promise<Compaction> {
  const active = await listRuns(db, { ...ref, active: true }, { limit: 1, order: 'desc' });
  if (active.length) throw conflict('Cannot compact the conversation while a run of it is active');
  const { summary: earlier, transcript } = await conversationContext(db, ref);
  const inContext = transcript.filter((m) => m.role !== 'system' && m.role !== 'approval');
  // The latest user turn stays; before it, every tool call has its result, so what stays is a valid history.
  const cut = inContext.map((m) => m.role).lastIndexOf('user');
  if (cut <= 0)
    throw invalid(
      'Summarization failed to reduce the number of messages: there is nothing before the latest user message.',
    );
  const parsed = parseHandle(
    agent.model ?? `${agent.llm_config.model_endpoint_type}/${agent.llm_config.model}`,
  )!;
  const history = [
    earlier && `Summary of what came before: ${earlier}`,
    ...inContext.slice(0, cut).map(rendered),
  ];
  const reply = await providers(parsed.provider).complete({
    model: parsed.model,
    messages: [
      { role: 'system', content: SUMMARIZER_PROMPT },
      { role: 'user', content: history.filter(Boolean).join('\n') },
    ],
    tools: [],
    parallelToolCalls: false,
  });
  const summary = reply.text?.trim() ?? '';
  await setContextWindow(db, ref, inContext[cut].seq, summary);
  return { summary, num_messages_before: inContext.length, num_messages_after: inContext.length - cut };
}
