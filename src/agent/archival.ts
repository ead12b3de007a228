/**
 * Archival memory as Letta's agents use it (agent_manager.py, passage_manager.py): passages in the
 * agent's archives, inserted with their embedding and searched by meaning, with tag and date filters.
 * Used by the API (`/v1/agents/{id}/archival-memory`, `/v1/archives`) and by the archival tools.
 */
import type { Queryable } from '../db';
import * as archives from '../db/archives';
import type { AgentRow } from '../db/rows';
import { invalid } from '../errors';
import { newId } from '../ids';
import type { ModelProvider } from '../llm/types';
import { embedTexts } from './embeddings';
import { isoInZone } from './time';

/** Letta's RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE. */
const DEFAULT_TOP_K = 5;

export type Providers = (provider: string) => ModelProvider;

export interface PassageInput {
  text: string;
  tags?: string[] | null;
  created_at?: string | null;
  metadata?: Record<string, unknown> | null;
}

/** Embeds and stores passages in an archive, with the embedding config they were embedded with. */
export async function addPassages(
  db: Queryable,
  providers: Providers,
  archive: Pick<archives.ArchiveRow, 'id' | 'embedding_config'>,
  inputs: PassageInput[],
  what: string,
  signal?: AbortSignal,
): Promise<archives.PassageRow[]> {
  const vectors = await embedTexts(
    providers,
    archive.embedding_config,
    inputs.map((p) => p.text),
    what,
    signal,
  );
  return archives.insertPassages(
    db,
    archive.id,
    inputs.map((input, i) => ({
      id: newId('passage'),
      text: input.text,
      tags: [...new Set(input.tags ?? [])],
      embedding: vectors[i],
      embedding_config: archive.embedding_config!,
      metadata: input.metadata,
      created_at: input.created_at,
    })),
  );
}

/** The archive an agent's inserts go to: its own, made (and attached) on its first insert. */
export async function agentArchive(db: Queryable, agent: AgentRow): Promise<archives.ArchiveRow> {
  const existing = await archives.ownArchive(db, agent.id);
  if (existing) return existing;
  const archive = await archives.insertArchive(db, newId('archive'), {
    name: `${agent.name}'s archive`,
    description: null,
    embedding_config: agent.embedding_config,
    metadata: null,
  });
  await archives.attachArchive(db, agent.id, archive.id, true);
  return archive;
}

/** Inserts into the agent's archival memory, embedded with the agent's embedding model. */
export async function insertArchival(
  db: Queryable,
  providers: Providers,
  agent: AgentRow,
  input: PassageInput,
  signal?: AbortSignal,
) {
  const archive = await agentArchive(db, agent);
  const embedding = { ...archive, embedding_config: agent.embedding_config };
  return addPassages(db, providers, embedding, [input], `Agent ${agent.id}`, signal);
}

export interface ArchivalSearch {
  query: string;
  tags?: string[] | null;
  tag_match_mode?: 'any' | 'all' | null;
  top_k?: number | null;
  start_datetime?: string | null;
  end_datetime?: string | null;
}

/** A time bound: ISO 8601, or a date alone (its start, or its end when `endOfDay`), in UTC unless it says. */
function timeBound(value: string | null | undefined, endOfDay: boolean, name: string): Date | undefined {
  if (!value) return undefined;
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value);
  const text = dateOnly ? `${value}T${endOfDay ? '23:59:59.999' : '00:00:00'}Z` : value;
  const date = new Date(/[zZ]|[+-]\d{2}:?\d{2}$/.test(text) ? text : `${text}Z`);
  if (Number.isNaN(date.getTime()))
    throw invalid(`Invalid ${name} format: ${value}. Use ISO 8601 format (YYYY-MM-DD or YYYY-MM-DDTHH:MM)`);
  return date;
}

/** Letta's search of an agent's archival memory: the best matches, their times in the agent's zone. */
export async function searchArchival(
  db: Queryable,
  providers: Providers,
  agent: AgentRow,
  search: ArchivalSearch,
  signal?: AbortSignal,
) {
  if (!search.query.trim()) return [];
  const [embedding] = await embedTexts(
    providers,
    agent.embedding_config,
    [search.query],
    `Agent ${agent.id}`,
    signal,
  );
  const found = await archives.searchPassages(
    db,
    { agentId: agent.id },
    {
      embedding,
      tags: search.tags ?? undefined,
      tagMatchMode: search.tag_match_mode ?? 'any',
      limit: search.top_k ?? DEFAULT_TOP_K,
      start: timeBound(search.start_datetime, false, 'start_datetime'),
      end: timeBound(search.end_datetime, true, 'end_datetime'),
    },
  );
  return found.map((p) => ({
    id: p.id,
    timestamp: isoInZone(new Date(p.created_at), agent.timezone),
    content: p.text,
    tags: p.tags,
  }));
}
