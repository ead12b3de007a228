/**
 * Secrets at rest (agent secrets, sandbox env var values): AES-256-GCM before they reach the database,
 * stored as `v1:<iv>:<tag>:<ciphertext>` (base64 parts). A stored value not in that form was written
 * before encryption came in and is read as the plaintext it is; it is encrypted when next written.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from './logger';

const KEY_BYTES = 32;
const IV_BYTES = 12;

/** `v1:` + a 12-byte iv + a 16-byte tag + the ciphertext, each base64: nothing else reads as encrypted. */
const ENCRYPTED = /^v1:([A-Za-z0-9+/]{16}):([A-Za-z0-9+/]{22}==):([A-Za-z0-9+/]*={0,2})$/;

export class SecretsKeyError extends Error {
  override name = 'SecretsKeyError';
}

/** A 32-byte key from its hex (64 digits) or base64 form; undefined if it is neither. */
export function parseSecretsKey(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (!/^[A-Za-z0-9+/]{43}=?$/.test(text)) return undefined;
  const key = Buffer.from(text, 'base64');
  return key.length === KEY_BYTES ? key : undefined;
}

let processKey: Buffer | undefined;

/** The key this process encrypts and decrypts with; openDatabase sets it before handing out the database. */
export function useSecretsKey(key: Buffer): void {
  processKey = key;
}

function currentKey(): Buffer {
  if (!processKey) throw new SecretsKeyError('No SECRETS_KEY loaded: open the database with openDatabase');
  return processKey;
}

/** `key` defaults to the process's (useSecretsKey). */
export function encryptSecret(plaintext: string, key?: Buffer): string {
  const iv = crypto.randomBytes(IV_BYTES);
  const cipher = crypto.createCipheriv('aes-256-gcm', key ?? currentKey(), iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', ...[iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64'))].join(':');
}

/** The plaintext of a stored value; a value stored before encryption comes back as it is. */
export function decryptSecret(stored: string, key?: Buffer): string {
  const match = ENCRYPTED.exec(stored);
  if (!match) return stored;
  const [iv, tag, ciphertext] = match.slice(1).map((part) => Buffer.from(part, 'base64'));
  const decipher = crypto.createDecipheriv('aes-256-gcm', key ?? currentKey(), iv);
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretsKeyError(
      'A stored secret cannot be decrypted: SECRETS_KEY is not the key it was encrypted with ' +
        '(every process sharing this database needs the same SECRETS_KEY)',
    );
  }
}

/** Writes a new key aside, then links it in: processes starting together all end up with the same one. */
function createKeyFile(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const draft = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(draft, `${crypto.randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600 });
  try {
    fs.linkSync(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    fs.rmSync(draft, { force: true });
  }
}

/**
 * SECRETS_KEY, or else the key kept in `<DATA_DIR>/secrets.key` (made on first use, mode 0600), so a
 * single process needs no setup. Processes that share a database but not DATA_DIR must share SECRETS_KEY:
 * on a PostgreSQL database (`DATABASE_URL`) a warning says so. The embedded PGlite lives in DATA_DIR
 * beside the key and opens in one process only, so there the key file is all it takes.
 */
export function loadSecretsKey(
  config: { SECRETS_KEY?: Buffer; DATABASE_URL?: string; dataDir: string },
  log: Logger,
): Buffer {
  if (config.SECRETS_KEY) return config.SECRETS_KEY;
  const file = path.join(config.dataDir, 'secrets.key');
  if (!fs.existsSync(file)) createKeyFile(file);
  const key = parseSecretsKey(fs.readFileSync(file, 'utf8').trim());
  if (!key) throw new SecretsKeyError(`${file} does not hold a 32-byte key (base64 or hex)`);
  if (config.DATABASE_URL)
    log.warn({ file }, 'SECRETS_KEY is unset: every process sharing this database needs the same one');
  else log.debug({ file }, 'secrets are encrypted with the key kept in this file');
  return key;
}
