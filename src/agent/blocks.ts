/**
 * Memory blocks as Letta's blocks API manages them: one block, attached to any number of agents, which
 * each see and edit it. An agent's memory is addressed by label, so no agent may have two blocks of
 * one label, and no value may pass its block's limit.
 */
import type { Queryable } from '../db';
import { agentBlocks, attachBlocks, getAgentRow } from '../db/agents';
import * as repo from '../db/blocks';
import type { BlockRow } from '../db/rows';
import { invalid, notFound } from '../errors';
import type { z } from 'zod';
import type { CreateBlockSchema, UpdateBlockSchema } from '../schemas/agents';
import { DEFAULT_BLOCK_DESCRIPTIONS, DEFAULT_BLOCK_LIMIT } from './defaults';

type CreateBlock = z.infer<typeof CreateBlockSchema>;
type UpdateBlock = z.infer<typeof UpdateBlockSchema>;

function checkLimit(value: string, limit: number) {
  if (value.length > limit)
    throw invalid(`Edit failed: Exceeds ${limit} character limit (requested ${value.length})`);
}

/** A new block with Letta's defaults (its label's description, the default limit). */
export function newBlock(block: CreateBlock): repo.NewBlock {
  const limit = block.limit ?? DEFAULT_BLOCK_LIMIT;
  checkLimit(block.value, limit);
  return {
    label: block.label,
    value: block.value,
    char_limit: limit,
    description: block.description ?? DEFAULT_BLOCK_DESCRIPTIONS[block.label] ?? null,
    read_only: block.read_only ?? false,
    hidden: block.hidden ?? null,
    metadata: block.metadata ?? {},
    tags: block.tags ?? null,
  };
}

export async function loadBlock(db: Queryable, id: string): Promise<BlockRow> {
  const block = await repo.getBlock(db, id);
  if (!block) throw notFound(`Block ${id}`);
  return block;
}

/** Changes a block for every agent it is attached to; a new label must be free on each of them. */
export async function changeBlock(db: Queryable, block: BlockRow, patch: UpdateBlock): Promise<BlockRow> {
  checkLimit(patch.value ?? block.value, patch.limit ?? block.char_limit);
  if (patch.label && patch.label !== block.label) {
    const taken = (await repo.labelsBesideBlock(db, block.id)).find((b) => b.label === patch.label);
    if (taken) throw invalid(`Agent ${taken.agent_id} already has a block labelled '${patch.label}'`);
  }
  await repo.updateBlock(db, block.id, {
    label: patch.label ?? undefined,
    value: patch.value ?? undefined,
    char_limit: patch.limit ?? undefined,
    description: patch.description ?? undefined,
    read_only: patch.read_only ?? undefined,
    hidden: patch.hidden ?? undefined,
    metadata: patch.metadata ?? undefined,
    tags: patch.tags ?? undefined,
  });
  return (await repo.getBlock(db, block.id))!;
}

/** Attaches a block to an agent (again: no change); a label the agent already has is a 400. */
export async function attachBlock(db: Queryable, agentId: string, blockId: string): Promise<void> {
  if (!(await getAgentRow(db, agentId))) throw notFound(`Agent ${agentId}`);
  const block = await loadBlock(db, blockId);
  const clash = (await agentBlocks(db, agentId)).find((b) => b.label === block.label && b.id !== blockId);
  if (clash) throw invalid(`Agent ${agentId} already has a block labelled '${block.label}'`);
  await attachBlocks(db, agentId, [blockId]);
}
