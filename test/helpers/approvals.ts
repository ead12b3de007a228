/** The approval message a client sends to answer its tool's call with what the tool returned. */
export const clientToolReturn = (toolCallId: string, toolReturn: string) => ({
  type: 'approval' as const,
  approvals: [
    { type: 'tool' as const, tool_call_id: toolCallId, tool_return: toolReturn, status: 'success' as const },
  ],
});
