/** A tool's return as a response lists it (Letta's tool_return_message), as far as tests read it. */
export interface ToolReturn {
  message_type: 'tool_return_message';
  tool_return: string;
  status: 'success' | 'error';
}

/** The tool returns among a response's messages, in order. */
export const toolReturnsOf = (messages: unknown[]): ToolReturn[] =>
  (messages as { message_type: string }[]).filter(
    (m): m is ToolReturn => m.message_type === 'tool_return_message',
  );
