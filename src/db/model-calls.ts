/**
 * What a model call reads before it calls the provider: its agent with the blocks and tools the request
 * is built from, the client tools and context its run's request sent, the reply an earlier attempt
 * stored, and the run's context window, in one statement;
 * the transcript in a second, which finds the window itself, so that the two go at once: every
 * statement is a round trip and the pg client's work.
 */
import type { Queryable } from './database';
import type { AgentDirectories, AgentRow, BlockRow, MessageRow, ToolRow, TranscriptRow } from './rows';
import type { ClientTool } from '../../contracts/payloads';
import { agentDirectories } from './file-agents';
import { readTranscript, WINDOW, type TranscriptCache } from './transcripts';

/** One entry of the context a request sends for its run alone (an AG-UI run's `context`). */
export interface RequestContextEntry {
  description: string;
  value: string;
}

export interface ModelCallAgent extends AgentRow {
  blocks: BlockRow[];
  tools: ToolRow[];
  /** Its folders and the files it sees; none read when it has no folder. */
  directories?: AgentDirectories;
}

export interface ModelCallRead {
  agent?: ModelCallAgent;
  /** The reply an earlier attempt of this call stored (by its idempotency key). */
  stored?: MessageRow;
  conversationId: string | null;
  summary: string | null;
  transcript: TranscriptRow[];
  /** The client tools the run's request sent, with their schemas. */
  clientTools: ClientTool[];
  /** The context the run's request sent, which its model calls show and the transcript never holds. */
  requestContext: RequestContextEntry[];
}

type Row = Partial<AgentRow> & {
  call_stored: Dated<MessageRow> | null;
  call_blocks: Dated<BlockRow>[] | null;
  call_tools: Dated<ToolRow>[] | null;
  call_has_folders: boolean;
  call_run_found: boolean;
  call_conversation_id: string | null;
  call_summary: string | null;
  call_client_tools: string | null;
  call_request_context: string | null;
};

/** A row as JSON gives it: its times as text. */
type Dated<T> = Omit<T, 'created_at' | 'updated_at'> & { created_at: string; updated_at?: string };

function withDates<T extends { created_at: Date }>(row: Dated<T>): T {
  const updated = row.updated_at === undefined ? {} : { updated_at: new Date(row.updated_at) };
  return { ...row, created_at: new Date(row.created_at), ...updated } as unknown as T;
}

const CONTEXT = `SELECT a.*,
    (SELECT to_jsonb(m) FROM messages m WHERE m.idempotency_key = $3) AS call_stored,
    (SELECT json_agg(b ORDER BY ab.position, b.created_at)
      FROM blocks b JOIN agent_blocks ab ON ab.block_id = b.id WHERE ab.agent_id = $2) AS call_blocks,
    (SELECT json_agg(t ORDER BY t.name)
      FROM tools t JOIN agent_tools at ON at.tool_id = t.id WHERE at.agent_id = $2) AS call_tools,
    EXISTS (SELECT 1 FROM agents_folders f WHERE f.agent_id = $2) AS call_has_folders,
    w.agent_id IS NOT NULL AS call_run_found,
    w.conversation_id AS call_conversation_id,
    w.summary AS call_summary,
    (SELECT coalesce(p.body, (r.request_config->'client_tools')::text)
      FROM runs r LEFT JOIN request_parts p ON p.digest = r.request_config->>'client_tools_digest'
      WHERE r.id = $1) AS call_client_tools,
    (SELECT p.body
      FROM runs r JOIN request_parts p ON p.digest = r.request_config->>'request_context_digest'
      WHERE r.id = $1) AS call_request_context
  FROM (SELECT 1) one LEFT JOIN agents a ON a.id = $2 LEFT JOIN (${WINDOW}) w ON true`;

/**
 * Everything `callModel` reads for the call of `runId` whose reply is stored under `idempotencyKey`; the
 * transcript after what `transcripts` holds of it.
 */
export async function readModelCall(
  db: Queryable,
  transcripts: TranscriptCache,
  key: { agentId: string; runId: string; idempotencyKey: string },
): Promise<ModelCallRead> {
  const [[row], transcript] = await Promise.all([
    db.query<Row>(CONTEXT, [key.runId, key.agentId, key.idempotencyKey]),
    readTranscript(db, transcripts, key),
  ]);
  const {
    call_stored,
    call_blocks,
    call_tools,
    call_has_folders,
    call_run_found,
    call_conversation_id,
    call_summary,
    call_client_tools,
    call_request_context,
    ...agentRow
  } = row;
  if (!call_run_found) throw new Error(`run ${key.runId} does not exist`);
  const agent = agentRow.id
    ? {
        ...(agentRow as AgentRow),
        blocks: (call_blocks ?? []).map((b) => withDates<BlockRow>(b)),
        tools: (call_tools ?? []).map((t) => withDates<ToolRow>(t)),
        ...(call_has_folders ? { directories: await agentDirectories(db, key.agentId) } : {}),
      }
    : undefined;
  return {
    agent,
    stored: call_stored ? withDates<MessageRow>(call_stored) : undefined,
    conversationId: call_conversation_id,
    summary: call_summary,
    transcript,
    clientTools: call_client_tools ? (JSON.parse(call_client_tools) as ClientTool[]) : [],
    requestContext: call_request_context ? (JSON.parse(call_request_context) as RequestContextEntry[]) : [],
  };
}
