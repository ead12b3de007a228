/**
 * A tool call's id in its MCP request: the `_meta` of every `tools/call` of a call carries it, the same
 * in each attempt, as a key a server may make the call idempotent with (a retry after an interrupted
 * attempt sends it again).
 */

/** The `_meta` key that carries a call's id (the MCP specification's reverse-DNS prefix form). */
export const CALL_ID_META_KEY = 'com.letta/tool_call_id';

/** A tools/call's `_meta` with the call's id, when it has one. */
export const callIdMeta = (callId: string | undefined) =>
  callId === undefined ? {} : { _meta: { [CALL_ID_META_KEY]: callId } };
