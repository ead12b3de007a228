/** Stop reasons the turn and its model call agree on (sandbox-safe: pure functions). */
import type { StepReply } from './payloads';

/** How a request ends on a reply without tool calls: cut short by the token limit, or its turn over. */
export const finalReplyStopReason = (finishReason: StepReply['finishReason']) =>
  finishReason === 'length' ? 'max_tokens_exceeded' : 'end_turn';

/**
 * The stop reason of a run paused for any answer: a person's approval, a client tool's return, or the
 * user's answer to an MCP server's question (an elicitation). Letta's wire value names the first.
 */
export const PAUSED = 'requires_approval';
