import type { Queryable } from './database';
import { json } from './sql';
import { closeClaim, takeClosedClaim } from './tool-claims';
import type { ReturnPart } from '../returns/return-parts';

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
  /** The return as Letta's return parts, when it holds an image; `func_return` is then its text form. */
  func_return_parts?: ReturnPart[] | null;
}

export function findToolExecution(db: Queryable, toolCallId: string): Promise<ToolExecution | undefined> {
  return db
    .query<ToolExecution>('SELECT * FROM tool_executions WHERE tool_call_id = $1', [toolCallId])
    .then((rows) => rows[0]);
}

/**
 * A memory edit's block write, written by the statement that records the call, and only over the
 * value the edit was planned from: the block, still this agent's under the same label and writable,
 * must hold `previous` still.
 */
export interface BlockValueWrite {
  blockId: string;
  label: string;
  previous: string;
  value: string;
}

/** The block a memory edit was planned from changed before its write: plan it again. */
export class StaleBlockError extends Error {
  constructor(blockId: string) {
    super(`block ${blockId} changed while a memory edit was planned from it`);
  }
}

const INSERT_EXECUTION = `INSERT INTO tool_executions
    (tool_call_id, run_id, agent_id, tool_name, status, func_return, stdout, stderr, func_return_parts)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
  ON CONFLICT (tool_call_id) DO NOTHING RETURNING *`;

/** The record, made only by the holder ($10) of the call's claim, which it closes. */
const INSERT_CLAIMED_EXECUTION = `WITH claim AS (${closeClaim(10)})
  INSERT INTO tool_executions
    (tool_call_id, run_id, agent_id, tool_name, status, func_return, stdout, stderr, func_return_parts)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE EXISTS (SELECT 1 FROM claim)
  ON CONFLICT (tool_call_id) DO NOTHING RETURNING *`;

/** A record no tool run makes, under the claim it takes and closes as owner $10 (takeClosedClaim). */
const INSERT_UNRUN_EXECUTION = `WITH claim AS (${takeClosedClaim(3, 10)})
  INSERT INTO tool_executions
    (tool_call_id, run_id, agent_id, tool_name, status, func_return, stdout, stderr, func_return_parts)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE EXISTS (SELECT 1 FROM claim)
  ON CONFLICT (tool_call_id) DO NOTHING RETURNING *`;

/** The claim was taken over (its lease ran out while this attempt ran): it records nothing. */
export class ClaimLostError extends Error {
  constructor(toolCallId: string) {
    super(`tool call ${toolCallId}: its claim was taken over by another attempt; nothing recorded`);
    this.name = 'ClaimLostError';
  }
}

/**
 * The record and the block write, both only where the block holds the planned-from value (locked
 * until the statement ends, so nothing writes between the check and the write) and the record is
 * new: a call's write is never applied twice, nor over a write it did not see.
 */
const INSERT_EXECUTION_WRITING_BLOCK = `WITH unchanged AS (
    SELECT b.id FROM blocks b JOIN agent_blocks ab ON ab.block_id = b.id AND ab.agent_id = $3
    WHERE b.id = $10 AND b.label = $12 AND b.value = $13 AND NOT b.read_only
    FOR UPDATE OF b),
  claim AS (${closeClaim(14, 'EXISTS (SELECT 1 FROM unchanged)')}),
  recorded AS (INSERT INTO tool_executions
      (tool_call_id, run_id, agent_id, tool_name, status, func_return, stdout, stderr, func_return_parts)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 FROM unchanged
      WHERE $14::text IS NULL OR EXISTS (SELECT 1 FROM claim)
    ON CONFLICT (tool_call_id) DO NOTHING RETURNING *),
  written AS (UPDATE blocks SET value = $11, updated_at = now()
    WHERE id = $10 AND EXISTS (SELECT 1 FROM recorded))
  SELECT * FROM recorded`;

/** $1 to $9 of the statements that record a call. */
const executionParams = (execution: ToolExecution) => [
  execution.tool_call_id,
  execution.run_id,
  execution.agent_id,
  execution.tool_name,
  execution.status,
  execution.func_return,
  json(execution.stdout),
  json(execution.stderr),
  json(execution.func_return_parts ?? null),
];

/**
 * Records a tool's result once, with its block write if it has one; a second record of the same call
 * keeps the first (and writes nothing). A write whose block changed since it was planned records
 * nothing: StaleBlockError. With `owner`, only while that attempt holds the call's claim (closing it):
 * otherwise nothing is recorded, ClaimLostError.
 */
export async function recordToolExecution(
  db: Queryable,
  execution: ToolExecution,
  write?: BlockValueWrite,
  owner?: string,
): Promise<ToolExecution> {
  const params = executionParams(execution);
  const [row] = write
    ? await db.query<ToolExecution>(INSERT_EXECUTION_WRITING_BLOCK, [
        ...params,
        write.blockId,
        write.value,
        write.label,
        write.previous,
        owner ?? null,
      ])
    : owner
      ? await db.query<ToolExecution>(INSERT_CLAIMED_EXECUTION, [...params, owner])
      : await db.query<ToolExecution>(INSERT_EXECUTION, params);
  const recorded = row ?? (await findToolExecution(db, execution.tool_call_id));
  if (recorded) return recorded;
  if (owner && !(await holdsClaim(db, execution.tool_call_id, owner)))
    throw new ClaimLostError(execution.tool_call_id);
  throw new StaleBlockError(write!.blockId);
}

/** Whether `owner` still holds the call's claim (as after a write that found its block changed). */
async function holdsClaim(db: Queryable, toolCallId: string, owner: string): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM tool_call_claims WHERE tool_call_id = $1 AND owner = $2', [
    toolCallId,
    owner,
  ]);
  return rows.length > 0;
}

/**
 * Records a result no tool run made (a refusal, a client's return, a denial) as `owner`, which takes
 * the call's claim and closes it in the same statement: the record that stands is the first (`made`:
 * whether it is this one), and never one made while an attempt that may still record holds the claim.
 * `held` when one does: the caller waits for it to record, give the claim up or let its lease run out,
 * as an attempt does.
 */
export async function recordUnrunCall(
  db: Queryable,
  execution: ToolExecution,
  owner: string,
): Promise<{ recorded: ToolExecution; made: boolean } | 'held'> {
  const [row] = await db.query<ToolExecution>(INSERT_UNRUN_EXECUTION, [...executionParams(execution), owner]);
  if (row) return { recorded: row, made: true };
  const earlier = await findToolExecution(db, execution.tool_call_id);
  if (earlier) return { recorded: earlier, made: false };
  const held = await db.query(
    `SELECT 1 FROM tool_call_claims WHERE tool_call_id = $1 AND lease_until <> 'infinity'`,
    [execution.tool_call_id],
  );
  if (held.length) return 'held';
  throw new Error(`tool call ${execution.tool_call_id}: agent ${execution.agent_id} no longer exists`);
}

export function toolExecutions(db: Queryable, toolCallIds: string[]): Promise<ToolExecution[]> {
  return db.query<ToolExecution>('SELECT * FROM tool_executions WHERE tool_call_id = ANY($1)', [toolCallIds]);
}
