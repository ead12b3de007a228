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

/**
 * What `POST /v1/tools/run` answers, as Letta's server.py run_tool_from_source does: a
 * ToolReturnMessage of no call (ids "null"), its return once more in `tool_returns`.
 */
export function sourceRunAnswer(name: string, part: Record<string, unknown>) {
  return {
    id: 'null',
    date: expect.any(String),
    name,
    otid: null,
    sender_id: null,
    step_id: null,
    is_err: null,
    seq_id: null,
    run_id: null,
    message_type: 'tool_return_message',
    ...part,
    tool_returns: [{ type: 'tool', ...part }],
  };
}
