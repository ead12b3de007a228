import { z } from 'zod';
import { isoMoment, pageQuery, queryBoolean, stringList } from './common';

const JsonObject = z.record(z.string(), z.unknown());
const tags = z.array(z.string()).nullish();

/** Letta's CreateArchivalMemory. */
export const CreateAgentPassageSchema = z.object({
  text: z.string().min(1),
  tags,
  created_at: z.iso.datetime({ offset: true, local: true }).nullish(),
});

export const ListAgentPassagesQuery = z.object({
  after: z.string().optional(),
  before: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  search: z.string().optional(),
  ascending: queryBoolean.default(true),
});

export const SearchAgentPassagesQuery = z.object({
  query: z.string(),
  tags: stringList,
  tag_match_mode: z.enum(['any', 'all']).default('any'),
  top_k: z.coerce.number().int().min(1).max(1000).optional(),
  start_datetime: z.string().optional(),
  end_datetime: z.string().optional(),
});

export const CreateArchiveSchema = z.object({
  name: z.string().min(1),
  description: z.string().nullish(),
  embedding: z.string().nullish(),
  embedding_config: JsonObject.nullish(),
});

export const UpdateArchiveSchema = z.object({
  name: z.string().min(1).nullish(),
  description: z.string().nullish(),
});

export const ListArchivesQuery = pageQuery(50, 'desc').extend({
  name: z.string().optional(),
  agent_id: z.string().optional(),
});

/** A passage given to an archive (Letta's PassageCreateRequest). */
export const CreateArchivePassageSchema = z.object({
  text: z.string().min(1),
  tags,
  metadata: JsonObject.nullish(),
  created_at: z.iso.datetime({ offset: true, local: true }).nullish(),
});

export const CreateArchivePassagesSchema = z.object({
  passages: z.array(CreateArchivePassageSchema).min(1).max(1000),
});

/** Letta's PassageSearchRequest: the agent's archives, else the archive's, else every archive's. */
export const SearchPassagesSchema = z.object({
  query: z.string().nullish(),
  agent_id: z.string().nullish(),
  archive_id: z.string().nullish(),
  tags,
  tag_match_mode: z.enum(['any', 'all']).default('any'),
  limit: z.number().int().min(1).max(100).default(50),
  start_date: isoMoment.nullish(),
  end_date: isoMoment.nullish(),
});
