/**
 * Why the core cannot do what it was asked, in its own terms: the API answers each kind with its HTTP
 * status and Letta's error shape (src/api/errors.ts); elsewhere (activities, start-up) it is an error
 * like any other. The detail is what the caller is told: a text, or Letta's structured detail.
 */
export type DomainErrorKind = 'invalid' | 'not_found' | 'conflict';

export class DomainError extends Error {
  override name = 'DomainError';
  constructor(
    readonly kind: DomainErrorKind,
    readonly detail: unknown,
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
  }
}

/** The request cannot be done as asked (HTTP 400). */
export const invalid = (detail: unknown) => new DomainError('invalid', detail);

/** Something the request names does not exist (HTTP 404). */
export const notFound = (what: string) => new DomainError('not_found', `${what} not found`);

/** The request conflicts with the state things are in (HTTP 409). */
export const conflict = (detail: unknown) => new DomainError('conflict', detail);
