/**
 * Archival memory as Letta's agents use it (agent_manager.py, passage_manager.py): passages in the
 * agent's archives, inserted with their embedding and searched by meaning, with tag and date filters.
 * Used by the API (`/v1/agents/{id}/archival-memory`, `/v1/archives`, `/v1/passages/search`) and by
 * the archival tools.
 */
import type { Queryable } from '../db';
import * as archives from '../db/archives';
import type { AgentRow } from '../db/rows';
import { invalid } from '../errors';
import { newId } from '../ids';
import type { ModelProvider } from '../llm/types';
import { embedTexts } from './embeddings';
import { isoInZone } from '../time';

/** Letta's RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE. */
const DEFAULT_TOP_K = 5;

export type Providers = (provider: string) => ModelProvider;

export interface PassageInput {
  text: string;
  tags?: string[] | null;
  created_at?: string | null;
  metadata?: Record<string, unknown> | null;
}

/**
 * Embeds and stores passages in an archive, with the embedding config they were embedded with. An
 * archive without an embedding model keeps their text alone, as Letta does: searches find them by
 * their words.
 */
export async function addPassages(
  db: Queryable,
  providers: Providers,
  archive: Pick<archives.ArchiveRow, 'id' | 'embedding_config'>,
  inputs: PassageInput[],
  what: string,
  signal?: AbortSignal,
): Promise<archives.PassageRow[]> {
  const texts = inputs.map((p) => p.text);
  const vectors = archive.embedding_config
    ? await embedTexts(providers, archive.embedding_config, texts, what, signal)
    : texts.map(() => null);
  return archives.insertPassages(
    db,
    archive.id,
    inputs.map((input, i) => ({
      id: newId('passage'),
      text: input.text,
      tags: [...new Set(input.tags ?? [])],
      embedding: vectors[i],
      embedding_config: archive.embedding_config,
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

/** Inserts into the agent's archival memory, embedded with the agent's embedding model (if it has one). */
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

export interface PassageSearch extends archives.PassageFilters {
  query?: string | null;
  limit: number;
}

/**
 * The passages in scope nearest a query, best first, with their scores. Archives of one scope may
 * use different embedding models, so the query is embedded with each model its passages were
 * embedded with, and each passage is scored by its cosine similarity to the query's vector of its own
 * model. Passages kept without an embedding follow when their text holds the query, scored 0 as
 * Letta scores a text match. Without a query: every passage that passes the filters, oldest first.
 */
export async function findPassages(
  db: Queryable,
  providers: Providers,
  scope: archives.PassageScope,
  search: PassageSearch,
  signal?: AbortSignal,
): Promise<(archives.PassageRow & { score: number })[]> {
  const query = search.query?.trim();
  if (!query) return (await archives.passagesByText(db, scope, search)).map((p) => ({ ...p, score: 0 }));
  const configs = await archives.passageEmbeddings(db, scope);
  const ranked = await Promise.all(
    configs.map(async (config) => {
      const model = {
        provider: String(config.embedding_endpoint_type),
        model: String(config.embedding_model),
      };
      const what = `A search of passages embedded with ${model.provider}/${model.model}`;
      const [embedding] = await embedTexts(providers, config, [query], what, signal);
      return archives.searchPassages(db, scope, { ...search, embedding, model });
    }),
  );
  const byText = await archives.passagesByText(db, scope, { ...search, text: query });
  return [
    ...ranked
      .flat()
      .sort(
        (a, b) => b.score - a.score || new Date(b.created_at).getTime() - new Date(a.created_at).getTime(),
      ),
    ...byText.map((p) => ({ ...p, score: 0 })),
  ].slice(0, search.limit);
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
  const found = await findPassages(
    db,
    providers,
    { agentId: agent.id },
    {
      query: search.query,
      tags: search.tags ?? undefined,
      tagMatchMode: search.tag_match_mode ?? 'any',
      limit: search.top_k ?? DEFAULT_TOP_K,
      start: timeBound(search.start_datetime, false, 'start_datetime'),
      end: timeBound(search.end_datetime, true, 'end_datetime'),
    },
    signal,
  );
  return found.map((p) => ({
    id: p.id,
    timestamp: isoInZone(new Date(p.created_at), agent.timezone),
    content: p.text,
    tags: p.tags,
  }));
}
