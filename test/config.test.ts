import fs, { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, ConfigSchema, loadConfig, SETTINGS_AREAS } from '../src/config';
import { modalUnsupportedReason } from '../src/sandbox/modal-support';

describe('loadConfig', () => {
  it('fills in the documented defaults from an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 8283,
      HOST: '127.0.0.1',
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_PORT: 7233,
      TEMPORAL_UI_PORT: 8233,
      LOG_LEVEL: 'info',
    });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.TEMPORAL_ADDRESS).toBeUndefined();
    expect(config.dataDir).toBe(path.resolve('./data'));
  });

  it('documents every setting, with its default, in docs/configuration.md', () => {
    const readme = readFileSync(path.join(__dirname, '..', 'docs', 'configuration.md'), 'utf8');
    const defaults = loadConfig({}) as unknown as Record<string, unknown>;
    for (const name of Object.keys(ConfigSchema.shape)) {
      const row = readme.split('\n').find((line) => line.startsWith(`| \`${name}\``));
      expect([name, row !== undefined]).toEqual([name, true]);
      const value = defaults[name];
      if (typeof value === 'number') expect([name, row!.includes(`\`${value}\``)]).toEqual([name, true]);
    }
  });

  it("takes every variable from exactly one area's schema", () => {
    const inAreas = SETTINGS_AREAS.flatMap((area) => Object.keys(area.schema.shape));
    expect([...inAreas].sort()).toEqual(Object.keys(ConfigSchema.shape).sort());
  });

  it('treats empty strings as unset', () => {
    const config = loadConfig({ DATABASE_URL: '', TEMPORAL_ADDRESS: '', PORT: '9000' });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.TEMPORAL_ADDRESS).toBeUndefined();
    expect(config.PORT).toBe(9000);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['TEMPORAL_UI_PORT', '1.5'],
    ['TEMPORAL_ADDRESS', 'http://temporal:7233'],
    ['LOG_LEVEL', 'loud'],
    ['CORS_ORIGINS', 'app.example.com'],
    ['SHUTDOWN_TIMEOUT_MS', '-1'],
    ['OUTBOUND_ALLOW_PRIVATE', '10.0.0.0/8, 127.0.0.1/33'],
    ['OUTBOUND_ALLOW_PRIVATE', 'http://intranet.example/'],
  ])('rejects %s=%s with one line naming the variable', (name, value) => {
    let error: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain(`${name}=${JSON.stringify(value)}`);
    expect(message).not.toContain('\n');
  });

  it('refuses a shutdown timeout that leaves no time past the grace, naming both', () => {
    expect(loadConfig({})).toMatchObject({ SHUTDOWN_GRACE_MS: 30_000, SHUTDOWN_TIMEOUT_MS: 45_000 });
    expect(loadConfig({ SHUTDOWN_GRACE_MS: '5000', SHUTDOWN_TIMEOUT_MS: '15000' }).SHUTDOWN_GRACE_MS).toBe(
      5_000,
    );
    for (const env of [{ SHUTDOWN_GRACE_MS: '60000' }, { SHUTDOWN_TIMEOUT_MS: '35000' }]) {
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(
        /SHUTDOWN_TIMEOUT_MS=\d+: must be at least SHUTDOWN_GRACE_MS \(\d+\) \+ 10000/,
      );
    }
  });

  it.each([
    ['DATABASE_URL', 'hunter2 is not a url'],
    ['OPENAI_BASE_URL', 'http//no-scheme'],
    ['SECRETS_KEY', 'hunter2'],
    ['AUTH_FAILURE_LIMIT', 'hunter2'],
  ])('names a bad %s without repeating a value that may hold a secret', (name, value) => {
    const message = (() => {
      try {
        loadConfig({ [name]: value });
      } catch (error) {
        return (error as Error).message;
      }
    })();
    expect(message).toContain(`${name}=`);
    if (/KEY|DATABASE_URL/.test(name)) expect(message).not.toContain('hunter2');
    else expect(message).toContain(JSON.stringify(value));
  });

  it('reads CORS_ORIGINS as origins, a trailing slash dropped, and ALLOWED_HOSTS as a list', () => {
    const config = loadConfig({
      CORS_ORIGINS: 'https://app.example.com/, http://localhost:3000',
      ALLOWED_HOSTS: 'a.example, b',
    });
    expect(config.CORS_ORIGINS).toEqual(['https://app.example.com', 'http://localhost:3000']);
    expect(config.ALLOWED_HOSTS).toEqual(['a.example', 'b']);
    expect(loadConfig({}).CORS_ORIGINS).toEqual([]);
  });

  it('uses E2B only when SANDBOX_TYPE=e2b chooses it, and then requires its key', () => {
    expect(loadConfig({ E2B_API_KEY: 'e2b_key' }).SANDBOX_TYPE).toBe('local');
    expect(() => loadConfig({ SANDBOX_TYPE: 'e2b' })).toThrow(
      new ConfigError('Invalid configuration: E2B_API_KEY="": required with SANDBOX_TYPE=e2b'),
    );
    expect(loadConfig({ SANDBOX_TYPE: 'e2b', E2B_API_KEY: 'e2b_key' }).SANDBOX_TYPE).toBe('e2b');
  });

  it('runs every tool on Modal with SANDBOX_TYPE=modal only with its credentials, on a Node that can', () => {
    expect(() => loadConfig({ SANDBOX_TYPE: 'modal' })).toThrow(
      new ConfigError(
        'Invalid configuration: MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are required with SANDBOX_TYPE=modal',
      ),
    );
    const env = { SANDBOX_TYPE: 'modal', MODAL_TOKEN_ID: 'ak-1', MODAL_TOKEN_SECRET: 'as-1' };
    const unsupported = modalUnsupportedReason();
    if (unsupported)
      expect(() => loadConfig(env)).toThrow(
        new ConfigError(`Invalid configuration: SANDBOX_TYPE=modal: ${unsupported}`),
      );
    else expect(loadConfig(env).SANDBOX_TYPE).toBe('modal');
  });

  it("runs TypeScript tools on a node the sandbox can see (only /usr is shown), the server's when it can", () => {
    const node = loadConfig({}).SANDBOX_NODE;
    expect(node.startsWith('/usr/') || !fs.existsSync('/usr/bin/node')).toBe(true);
    if (process.execPath.startsWith('/usr/')) expect(node).toBe(process.execPath);
    expect(loadConfig({ SANDBOX_NODE: '/opt/node/bin/node' }).SANDBOX_NODE).toBe('/opt/node/bin/node');
  });

  it('reads E2B_SANDBOX_REUSE as true or false', () => {
    expect(loadConfig({}).E2B_SANDBOX_REUSE).toBe(false);
    expect(loadConfig({ E2B_SANDBOX_REUSE: 'true' }).E2B_SANDBOX_REUSE).toBe(true);
    expect(() => loadConfig({ E2B_SANDBOX_REUSE: 'no' })).toThrow(
      /E2B_SANDBOX_REUSE="no": expected true or false/,
    );
  });

  it('names every bad variable at once', () => {
    expect(() => loadConfig({ PORT: 'abc', TEMPORAL_PORT: 'x' })).toThrow(/PORT="abc".*TEMPORAL_PORT="x"/);
  });
});
