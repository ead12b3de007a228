/**
 * The result channel where a sandbox has only stdout (E2B): the runner writes its result framed as
 * marker + length (8 hex digits) + md5 hex of the payload + payload, as Letta's sandboxes do, but all
 * in ASCII: E2B hands stdout over decoded as UTF-8 text, which would mangle binary marker or length
 * bytes. The marker is random per call, so a tool cannot forge the frame by printing.
 */
import { createHash, randomBytes } from 'node:crypto';

const LENGTH_CHARS = 8;
const DIGEST_CHARS = 32;

export function newResultMarker(): string {
  return randomBytes(16).toString('hex');
}

export class CorruptResultError extends Error {
  override name = 'CorruptResultError';
}

/** Splits the framed result out of the tool's stdout; `result` is undefined when there is no frame. */
export function splitFramedResult(stdout: Buffer, marker: string): { result?: string; stdout: string } {
  const start = stdout.indexOf(marker, 0, 'ascii');
  if (start < 0) return { stdout: stdout.toString('utf8') };
  const lengthAt = start + marker.length;
  const digestAt = lengthAt + LENGTH_CHARS;
  const payloadAt = digestAt + DIGEST_CHARS;
  const lengthText = stdout.toString('ascii', lengthAt, digestAt);
  const length = /^[0-9a-f]{8}$/.test(lengthText) ? parseInt(lengthText, 16) : -1;
  const payload = stdout.subarray(payloadAt, payloadAt + length);
  const digest = stdout.toString('ascii', digestAt, payloadAt);
  if (payload.length !== length || createHash('md5').update(payload).digest('hex') !== digest)
    throw new CorruptResultError('Function ran, but output is corrupted.');
  const rest = Buffer.concat([stdout.subarray(0, start), stdout.subarray(payloadAt + length)]);
  return { result: payload.toString('utf8'), stdout: rest.toString('utf8') };
}
