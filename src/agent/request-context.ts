/**
 * Context a request sends for its run alone (an AG-UI run's `context`: what the frontend shows, who
 * the user is), as Letta passes request-scoped additions such as `client_skills`: stored with the run
 * as a request part, shown in the system message of every model call of that run, never in the
 * transcript.
 */
import { invalid } from '../errors';
import type { RequestContextEntry } from '../db/model-calls';

/** The entries' size as the limit counts it: their descriptions' and values' UTF-8 bytes. */
const bytesOf = (entries: RequestContextEntry[]) =>
  entries.reduce(
    (sum, entry) => sum + Buffer.byteLength(entry.description) + Buffer.byteLength(entry.value),
    0,
  );

/**
 * Refuses (400) a request whose context is larger than `maxBytes` (REQUEST_CONTEXT_MAX_BYTES), before
 * anything of the request is stored: past it, the context would crowd out the model's window at every
 * call of the run.
 */
export function checkRequestContext(entries: RequestContextEntry[], maxBytes: number): void {
  const bytes = bytesOf(entries);
  if (bytes > maxBytes)
    throw invalid(
      `The request's context entries come to ${bytes} bytes, more than REQUEST_CONTEXT_MAX_BYTES (${maxBytes}): send less context`,
    );
}

/** Text as XML content: nothing in it can open or close an element. */
const escapeText = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/** Text as a double-quoted XML attribute's value. */
const escapeAttribute = (text: string) => escapeText(text).replaceAll('"', '&quot;');

/**
 * The system message of a model call whose run's request sent `entries`: the compiled prompt, then a
 * `<request_context>` section with one `<context>` per entry, escaped so that no entry can end the
 * section. Without entries, the prompt as it is (a provider's prefix cache sees the same message).
 */
export function withRequestContext(system: string, entries: RequestContextEntry[]): string {
  if (!entries.length) return system;
  const rendered = entries.map(
    (entry) =>
      `<context description="${escapeAttribute(entry.description)}">${escapeText(entry.value)}</context>`,
  );
  return [
    system,
    '',
    '<request_context>',
    'The client sent this context with the current request; it holds for this request only:',
    ...rendered,
    '</request_context>',
  ].join('\n');
}
