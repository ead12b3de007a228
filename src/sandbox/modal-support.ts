/**
 * Whether Modal sandboxes can be used here: Modal's JavaScript SDK needs Node 22 or later. The API
 * refuses to create or change a `modal` sandbox config on an older Node (reading and deleting one work
 * everywhere), and the Modal backend checks the same.
 */

/** The oldest Node major version Modal's JavaScript SDK runs on. */
export const MODAL_MIN_NODE_MAJOR = 22;

/** Why Modal cannot be used on this Node, or null when it can. */
export function modalUnsupportedReason(nodeVersion = process.versions.node): string | null {
  const version = nodeVersion.replace(/^v/, '');
  const major = Number(/^(\d+)\./.exec(`${version}.`)?.[1]);
  if (Number.isInteger(major) && major >= MODAL_MIN_NODE_MAJOR) return null;
  return `Modal sandboxes need Node ${MODAL_MIN_NODE_MAJOR} or later; this server runs Node ${version}`;
}
