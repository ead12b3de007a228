/** The answers to a paused turn's calls, as Letta's approval message carries them. */
import type { ElicitationResponse } from './elicitation-answers';

type ContentPart = { type: string; text?: string; [key: string]: unknown };

/** A client's own execution of a tool: its return is used as it is. */
export interface ClientToolReturn {
  type: 'tool';
  tool_call_id: string;
  tool_return: string | ContentPart[];
  status: 'success' | 'error';
  stdout?: string[] | null;
  stderr?: string[] | null;
}

/** A person's decision on a server tool call. */
export interface ApprovalDecision {
  type: 'approval';
  tool_call_id: string;
  approve: boolean;
  reason?: string | null;
  /** An extension: the arguments the approved call runs with instead of the model's. */
  arguments?: Record<string, unknown> | null;
  /** An extension: the answer to the call's MCP server's elicitation (src/approvals/elicitations.ts). */
  elicitation_response?: ElicitationResponse | null;
}

export type ApprovalAnswer = ClientToolReturn | ApprovalDecision;
