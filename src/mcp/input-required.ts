/**
 * Input-required results: how a server of the 2026-07-28 revision asks the user something mid-call
 * (multi round-trip requests, SEP-2322). The call ends with `resultType: 'input_required'`, the
 * requests to answer (`inputRequests`, by key) and an opaque `requestState`; the client gathers the
 * answers, then calls the tool again, with a new JSON-RPC id, the same arguments, `inputResponses` by
 * the same keys and the `requestState` exactly as sent (none when the server sent none). Nothing is
 * held open in between: a pause is only what is stored (InputRetry), so it survives a restart of
 * every component, this server's workers and the MCP server alike.
 */
import {
  CallToolResultSchema,
  ElicitRequestFormParamsSchema,
  type CallToolResult,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { InputRetry } from '../db/mcp-elicitations';
import type { ElicitationHandling, McpCallOutcome, PendingElicitation } from './elicited-calls';

const InputRequestSchema = z.looseObject({
  method: z.string(),
  params: z.record(z.string(), z.unknown()).optional(),
});

const InputRequiredResultSchema = z.looseObject({
  resultType: z.literal('input_required'),
  inputRequests: z.record(z.string(), InputRequestSchema).optional(),
  requestState: z.string().optional(),
});

/** What a tools/call of the revision answers: input required, or the result (`complete` when unsaid). */
export const ToolCallAnswerSchema = z.union([InputRequiredResultSchema, CallToolResultSchema]);
export type ToolCallAnswer = z.infer<typeof ToolCallAnswerSchema>;
type InputRequiredResult = z.infer<typeof InputRequiredResultSchema>;

/** A tools/call's params, a retry's with the answers and the server's state. */
export interface ToolCallParams {
  name: string;
  arguments: Record<string, unknown>;
  inputResponses?: Record<string, ElicitResult>;
  requestState?: string;
}

/** A server that keeps asking past MCP_INPUT_ROUNDS: the call's error result. */
export class McpInputRoundsError extends Error {
  override name = 'McpInputRoundsError';
}

/**
 * The round an input-required result opens: its form elicitations, the only requests this client
 * declares (a server must not send others; any it sends, or a malformed one, go unanswered, and it
 * may ask again).
 */
function roundOf(result: InputRequiredResult): InputRetry {
  const asked: InputRetry['asked'] = {};
  for (const [key, request] of Object.entries(result.inputRequests ?? {})) {
    const form = ElicitRequestFormParamsSchema.safeParse(request.params);
    if (request.method === 'elicitation/create' && form.success) asked[key] = form.data;
  }
  const { requestState } = result;
  return { ...(requestState !== undefined ? { requestState } : {}), asked, answered: {} };
}

/** The round with its first open question answered. */
export function withAnswer(round: InputRetry, answer: ElicitResult): InputRetry {
  const [key] = Object.keys(round.asked);
  if (key === undefined) return round;
  const { [key]: _answeredNow, ...asked } = round.asked;
  return { ...round, asked, answered: { ...round.answered, [key]: answer } };
}

/**
 * Answers the round's open questions as `handling` says: at once (a direct run), by pausing on the
 * next one (a step's call: what the pause stores is `retry`), or declined when nothing says how.
 * Once all are answered, the params of the call sent again.
 */
export function continueRound(
  call: ToolCallParams,
  round: InputRetry,
  handling: ElicitationHandling | undefined,
): { pending: PendingElicitation } | { params: ToolCallParams } {
  let open = round;
  for (;;) {
    const [question] = Object.values(open.asked);
    if (!question) break;
    if (handling && 'pauseAs' in handling) return { pending: { params: question, retry: open } };
    open = withAnswer(open, handling ? handling.answer(question) : { action: 'decline' });
  }
  const { requestState, answered } = open;
  return {
    params: {
      name: call.name,
      arguments: call.arguments,
      inputResponses: answered,
      ...(requestState !== undefined ? { requestState } : {}),
    },
  };
}

/**
 * Calls the tool (`first`) until its result, or until it pauses, each input-required answer handled
 * by continueRound; a server that asks more than `maxRounds` times in a row is an McpInputRoundsError.
 */
export async function callThroughInputs(
  send: (params: ToolCallParams) => Promise<ToolCallAnswer>,
  first: ToolCallParams,
  handling: ElicitationHandling | undefined,
  maxRounds: number,
): Promise<McpCallOutcome> {
  let params = first;
  for (let round = 1; ; round++) {
    const answer = await send(params);
    if (answer.resultType !== 'input_required') return { result: answer as CallToolResult };
    if (round > maxRounds)
      throw new McpInputRoundsError(
        `the MCP server still asked for input after ${maxRounds} answered rounds (MCP_INPUT_ROUNDS)`,
      );
    const next = continueRound(first, roundOf(answer as InputRequiredResult), handling);
    if ('pending' in next) return next;
    params = next.params;
  }
}
