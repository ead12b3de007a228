import type { TranscriptRow } from '../db/rows';
import type { ChatMessage } from '../llm/types';
import { assertToolCallsPaired } from './history-invariant';

/** The text of a stored content field: a string, or Letta's list of `{type:'text', text}` parts. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return (
      content
        .filter((part) => part && typeof part === 'object' && 'text' in part)
        .map((part) => String(part.text))
        // Letta joins a message's text parts so for the model (message.py, to_openai_dict).
        .join('\n\n')
    );
  }
  return '';
}

/** How the model is told of the messages a compaction took out of its context (Letta's words). */
export const summaryText = (summary: string) =>
  `Note: prior messages have been hidden from view due to conversation memory constraints.\nThe following is a summary of the previous messages:\n ${summary}`;

/**
 * The model's view of the transcript: the freshly compiled system prompt, the summary of what a
 * compaction took out of the context (if one did), then every stored message
 * (the stored system message is only the transcript's record of it). Tool messages become one entry per
 * return; a trailing assistant turn whose tool calls were never answered is dropped.
 */
export function modelContext(
  systemPrompt: string,
  transcript: TranscriptRow[],
  summary: string | null = null,
): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: systemPrompt }];
  if (summary) messages.push({ role: 'user', content: summaryText(summary) });
  const answered = new Set(transcript.flatMap((m) => (m.tool_returns ?? []).map((r) => r.tool_call_id)));
  for (const message of transcript) {
    switch (message.role) {
      case 'user':
        messages.push({ role: 'user', content: contentText(message.content) });
        break;
      case 'assistant': {
        const calls = (message.tool_calls ?? []).filter((call) => answered.has(call.id));
        const text = contentText(message.content) || null;
        if (text || calls.length) messages.push({ role: 'assistant', content: text, toolCalls: calls });
        break;
      }
      case 'tool':
        for (const ret of message.tool_returns ?? []) {
          messages.push({
            role: 'tool',
            toolCallId: ret.tool_call_id,
            content: ret.func_response,
            ...(ret.parts ? { parts: ret.parts } : {}),
          });
        }
        break;
    }
  }
  assertToolCallsPaired(messages);
  return messages;
}
