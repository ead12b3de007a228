import type { ChatMessage } from '../llm/types';

/**
 * The history invariant: every assistant message with tool calls is followed by exactly its tool
 * results, one per call, before anything else. Providers refuse a request that breaks it, and the agent
 * could not be talked to again. The database keeps it where messages are stored (migration 0010); this
 * is the same rule where a model request is built, so a break is named rather than sent.
 */
export class HistoryInvariantError extends Error {
  override name = 'HistoryInvariantError';
}

export function assertToolCallsPaired(messages: ChatMessage[]): void {
  messages.forEach((message, i) => {
    if (message.role !== 'assistant' || !message.toolCalls?.length) return;
    const expected = message.toolCalls.map((call) => call.id).sort();
    const following = messages.slice(i + 1, i + 1 + expected.length);
    const returned = following.map((m) => (m.role === 'tool' ? m.toolCallId : `(${m.role})`)).sort();
    if (returned.join('\n') !== expected.join('\n'))
      throw new HistoryInvariantError(
        `history invariant: the tool calls of message ${i} (${expected.join(', ')}) are followed by ${returned.join(', ') || 'nothing'}`,
      );
  });
}
