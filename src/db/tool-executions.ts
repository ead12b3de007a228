import type { Queryable } from './database';
import { json } from './sql';

export interface ToolExecution {
  tool_call_id: string;
  run_id: string;
  agent_id: string;
  tool_name: string;
  status: 'success' | 'error';
  /** The return as the model sees it (packaged, truncated). */
  func_return: string;
  stdout: string[] | null;
  stderr: string[] | null;
}

export function findToolExecution(db: Queryable, toolCallId: string): Promise<ToolExecution | undefined> {
  return db
    .query<ToolExecution>('SELECT * FROM tool_executions WHERE tool_call_id = $1', [toolCallId])
    .then((rows) => rows[0]);
}

/** A block's new value, written by the statement that records the call that wrote it. */
export interface BlockValueWrite {
  blockId: string;
  value: string;
}

const INSERT_EXECUTION = `INSERT INTO tool_executions
    (tool_call_id, run_id, agent_id, tool_name, status, func_return, stdout, stderr)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
  ON CONFLICT (tool_call_id) DO NOTHING RETURNING *`;

/** The record, and the block write only where the record is new: a call's write is never applied twice. */
const INSERT_EXECUTION_WRITING_BLOCK = `WITH recorded AS (${INSERT_EXECUTION}),
  written AS (UPDATE blocks SET value = $10, updated_at = now()
    WHERE id = $9 AND EXISTS (SELECT 1 FROM recorded))
  SELECT * FROM recorded`;

/**
 * Records a tool's result once, with its block write if it has one; a second record of the same call
 * keeps the first (and writes nothing).
 */
export async function recordToolExecution(
  db: Queryable,
  execution: ToolExecution,
  write?: BlockValueWrite,
): Promise<ToolExecution> {
  const params = [
    execution.tool_call_id,
    execution.run_id,
    execution.agent_id,
    execution.tool_name,
    execution.status,
    execution.func_return,
    json(execution.stdout),
    json(execution.stderr),
  ];
  const [row] = write
    ? await db.query<ToolExecution>(INSERT_EXECUTION_WRITING_BLOCK, [...params, write.blockId, write.value])
    : await db.query<ToolExecution>(INSERT_EXECUTION, params);
  return row ?? (await findToolExecution(db, execution.tool_call_id))!;
}

export function toolExecutions(db: Queryable, toolCallIds: string[]): Promise<ToolExecution[]> {
  return db.query<ToolExecution>('SELECT * FROM tool_executions WHERE tool_call_id = ANY($1)', [toolCallIds]);
}
