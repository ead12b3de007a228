import type { Logger } from '../logger';

/**
 * Whether this Node.js keeps AsyncLocalStorage's values in async context frames (Node 24's default,
 * Node 22's `--experimental-async-context-frame`) rather than on async resources.
 *
 * Without them, the workflow thread slows as it runs turns: every workflow's SDK code makes its own
 * AsyncLocalStorage stores (cancellation scopes, update and event scopes, the tracing context), Node
 * sets each store's key on the current async resource when it runs, never deletes it, and the resource
 * of every activation is the thread's one message port. The port so gains a property per store per
 * workflow, and each promise a workflow makes copies and reads them, its stack trace (the Temporal
 * UI's Stack Trace tab) the longer to take (bench/sdk-costs.md).
 */
export function hasAsyncContextFrames(
  nodeVersion = process.versions.node,
  flags: string[] = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)],
): boolean {
  const [major, minor] = nodeVersion.split('.').map(Number);
  if (major >= 24) return !flags.includes('--no-async-context-frame');
  // The flag came in Node 22.7.
  const flagged = major > 22 || (major === 22 && minor >= 7);
  return flagged && flags.includes('--experimental-async-context-frame');
}

/** What the server says, once a process, when it runs turns without async context frames. */
const ASYNC_CONTEXT_ADVICE =
  "this Node.js keeps AsyncLocalStorage on async resources: the workflow thread's work per turn grows with the turns the process has run (a restart resets it); run the server on Node 24 (scripts/install-node.sh 24), or on Node 22 with NODE_OPTIONS=--experimental-async-context-frame";

let warned = false;

/** Warns once a process if it runs turns without async context frames. */
export function warnWithoutAsyncContextFrames(log: Pick<Logger, 'warn'>): void {
  if (warned || hasAsyncContextFrames()) return;
  warned = true;
  log.warn(ASYNC_CONTEXT_ADVICE);
}
