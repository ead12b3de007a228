/** Addresses a listener binds, and how this machine reaches it. */

const WILDCARD_BINDS = new Set(['0.0.0.0', '::', '[::]']);

/** Whether a listener on `host` listens on every address of this machine. */
export const isWildcardHost = (host: string) => WILDCARD_BINDS.has(host);

/** The address a listener on `host` is reached at from this machine: loopback for a wildcard. */
export function reachableHost(host: string): string {
  if (isWildcardHost(host)) return host.includes(':') ? '[::1]' : '127.0.0.1';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** The API's address settings (src/api/settings.ts), as code below the API reads them. */
export interface PublicAddress {
  LETTA_PUBLIC_URL?: string;
  HOST: string;
  PORT: number;
}

/** The API's address as others reach it: LETTA_PUBLIC_URL, else the address it listens on. */
export const publicBaseUrl = (config: PublicAddress) =>
  config.LETTA_PUBLIC_URL ?? `http://${reachableHost(config.HOST)}:${config.PORT}`;
