/**
 * Large parts of requests, stored once and named by their digest (the SHA-256 of their JSON text): a
 * request's client tool schemas, an agent's tools and rules as a turn works with them. A letta-code
 * session sends the same tens of kilobytes of client tools with every answer; stored by content, they
 * are one row, and runs and workflow payloads carry the digest. A part never changes (its name is its
 * content), so whoever holds a digest reads exactly what was stored under it.
 */
import { createHash } from 'node:crypto';
import type { Queryable } from './database';

/** A value as it is stored: its JSON text and that text's digest. */
export function requestPart(value: unknown): { digest: string; body: string } {
  const body = JSON.stringify(value);
  return { digest: createHash('sha256').update(body).digest('hex'), body };
}

/** Stores `value` unless a part of its digest is stored already; returns the digest. */
export async function storeRequestPart(q: Queryable, value: unknown): Promise<string> {
  const { digest, body } = requestPart(value);
  await q.query('INSERT INTO request_parts (digest, body) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING', [
    digest,
    body,
  ]);
  return digest;
}

/** The value stored under `digest`; undefined when none is. */
export async function readRequestPart<T>(q: Queryable, digest: string): Promise<T | undefined> {
  const [row] = await q.query<{ body: string }>('SELECT body FROM request_parts WHERE digest = $1', [digest]);
  return row ? (JSON.parse(row.body) as T) : undefined;
}
