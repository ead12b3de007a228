/**
 * How the API shows a stored secret (agent secrets, sandbox variables, MCP credentials): never in full,
 * `****` and at most its last four characters. A client that sends back what it read (a GET, then a
 * PATCH of the same object) must not overwrite the secret with its mask: a masked value keeps the
 * stored one.
 */
const SHOWN_TAIL = 4;
/** Shorter secrets show nothing of themselves. */
const TAIL_FROM_LENGTH = 12;

export const maskSecret = (value: string) =>
  `****${value.length >= TAIL_FROM_LENGTH ? value.slice(-SHOWN_TAIL) : ''}`;

/** `given`, except where it repeats the mask of the stored value. */
export const unmaskSecret = (given: string, stored: string | null | undefined) =>
  stored !== null && stored !== undefined && given === maskSecret(stored) ? stored : given;

type SecretMap = Record<string, string>;

export const maskValues = (map: SecretMap | null | undefined) =>
  map && Object.fromEntries(Object.entries(map).map(([key, value]) => [key, maskSecret(value)]));

/** Each value of `given`, unless it repeats the mask of the stored value of its key. */
export const unmaskValues = (given: SecretMap, stored: SecretMap | null | undefined): SecretMap =>
  Object.fromEntries(Object.entries(given).map(([key, value]) => [key, unmaskSecret(value, stored?.[key])]));
