/**
 * The result channel where a sandbox has only stdout (E2B): the runner writes its result framed as
 * marker + 4-byte big-endian length + md5 hex of the payload + payload, as Letta's sandboxes do. The
 * marker is random per call, so a tool cannot forge the frame by printing.
 */
import { createHash, randomBytes } from 'node:crypto';

const LENGTH_BYTES = 4;
const DIGEST_CHARS = 32;

export function newResultMarker(): string {
  return randomBytes(16).toString('hex');
}

export class CorruptResultError extends Error {
  override name = 'CorruptResultError';
}

/** Splits the framed result out of the tool's stdout; `result` is undefined when there is no frame. */
export function splitFramedResult(stdout: Buffer, marker: string): { result?: string; stdout: string } {
  const start = stdout.indexOf(Buffer.from(marker, 'hex'));
  if (start < 0) return { stdout: stdout.toString('utf8') };
  const lengthAt = start + marker.length / 2;
  const length = stdout.readUInt32BE(lengthAt);
  const digestAt = lengthAt + LENGTH_BYTES;
  const payloadAt = digestAt + DIGEST_CHARS;
  const payload = stdout.subarray(payloadAt, payloadAt + length);
  const digest = stdout.subarray(digestAt, payloadAt).toString('ascii');
  if (payload.length !== length || createHash('md5').update(payload).digest('hex') !== digest)
    throw new CorruptResultError('Function ran, but output is corrupted.');
  const rest = Buffer.concat([stdout.subarray(0, start), stdout.subarray(payloadAt + length)]);
  return { result: payload.toString('utf8'), stdout: rest.toString('utf8') };
}
