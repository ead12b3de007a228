import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { ConfigError, loadConfig } from '../src/config';
import { decryptSecret, encryptSecret, loadSecretsKey, SecretsKeyError } from '../src/secrets';

const key = crypto.randomBytes(32);

describe('encryptSecret / decryptSecret', () => {
  it('round-trips with a fresh iv each time, in the versioned format', () => {
    const [a, b] = [encryptSecret('s3cret ✓', key), encryptSecret('s3cret ✓', key)];
    expect(a).not.toBe(b);
    expect(a).toMatch(/^v1:[A-Za-z0-9+/]{16}:[A-Za-z0-9+/]{22}==:[A-Za-z0-9+/=]+$/);
    expect(decryptSecret(a, key)).toBe('s3cret ✓');
    expect(decryptSecret(encryptSecret('', key), key)).toBe('');
  });

  it('reads a value stored before encryption as it is', () => {
    expect(decryptSecret('plain', key)).toBe('plain');
    expect(decryptSecret('v1:not:encrypted', key)).toBe('v1:not:encrypted');
  });

  it('fails with an error naming SECRETS_KEY on another key or a changed value', () => {
    const stored = encryptSecret('s3cret', key);
    expect(() => decryptSecret(stored, crypto.randomBytes(32))).toThrow(SecretsKeyError);
    const [version, iv, , ciphertext] = stored.split(':');
    const tampered = [version, iv, encryptSecret('other', key).split(':')[2], ciphertext].join(':');
    expect(() => decryptSecret(tampered, key)).toThrow(/SECRETS_KEY is not the key it was encrypted with/);
  });
});

describe('SECRETS_KEY', () => {
  it('takes 32 bytes as base64 or hex', () => {
    expect(loadConfig({ SECRETS_KEY: key.toString('base64') }).SECRETS_KEY).toEqual(key);
    expect(loadConfig({ SECRETS_KEY: key.toString('hex') }).SECRETS_KEY).toEqual(key);
    expect(loadConfig({ SECRETS_KEY: '' }).SECRETS_KEY).toBeUndefined();
  });

  it.each([crypto.randomBytes(16).toString('base64'), 'x'.repeat(44), key.toString('hex').slice(2)])(
    'refuses %s without repeating it',
    (value) => {
      let error: unknown;
      try {
        loadConfig({ SECRETS_KEY: value });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toContain('SECRETS_KEY=(hidden): expected 32 bytes as base64 or hex');
      expect((error as Error).message).not.toContain(value);
    },
  );

  it('is made once in DATA_DIR/secrets.key (mode 0600) when unset, with a warning on a shared database', () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'secrets-key-'));
    const warnings: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line).msg) });
    try {
      const config = loadConfig({ DATA_DIR: path.join(dataDir, 'nested') });
      const first = loadSecretsKey(config, log);
      const file = path.join(config.dataDir, 'secrets.key');
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      // The embedded PGlite opens in this process alone, beside the key: nothing to warn of.
      expect(warnings).toEqual([]);
      const shared = { ...config, DATABASE_URL: 'postgres://root@127.0.0.1:5432/test' };
      expect(loadSecretsKey(shared, log)).toEqual(first);
      expect(first).toHaveLength(32);
      expect(warnings).toEqual([
        'SECRETS_KEY is unset: every process sharing this database needs the same one',
      ]);

      expect(loadSecretsKey({ ...config, SECRETS_KEY: key }, log)).toEqual(key);
      fs.writeFileSync(file, 'garbage');
      expect(() => loadSecretsKey(config, log)).toThrow(`${file} does not hold a 32-byte key`);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
