import { z } from 'zod';
import { idPattern, type IdPrefix } from '../../ids';

/**
 * A parameter that must be an id of this kind (422 otherwise, as Letta's pattern check); the pattern
 * is the document's too.
 */
export const idOf = (prefix: IdPrefix) =>
  z.string().regex(idPattern(prefix), `expected an id like ${prefix}-<uuid4>`);

/** A query value the client may send once or repeated (qs `arrayFormat: 'repeat'`). */
export const queryList = <T extends z.ZodType>(item: T) =>
  z.preprocess((v) => (v === undefined ? undefined : Array.isArray(v) ? v : [v]), z.array(item).optional());

export const stringList = queryList(z.string());

const queryBoolean = z.preprocess(
  (v) => (v === 'true' ? true : v === 'false' ? false : v),
  z.boolean().optional(),
);

export const pageQuery = (defaultLimit: number, defaultOrder: 'asc' | 'desc') =>
  z.object({
    before: z.string().optional(),
    after: z.string().optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(defaultLimit),
    order: z.enum(['asc', 'desc']).default(defaultOrder),
  });

export { queryBoolean };

/**
 * A moment as ISO 8601 writes it, a date and time (without an offset: the server's local time) or a
 * date alone (midnight UTC), which JavaScript's Date reads; its pattern is the document's too.
 */
export const isoMoment = z
  .union([z.iso.datetime({ offset: true, local: true }), z.iso.date()])
  .transform((value) => new Date(value));

/** Letta's answer of a few deletes and closes: a sentence saying what was done. */
export const MessageAnswerSchema = z.object({ message: z.string() });
