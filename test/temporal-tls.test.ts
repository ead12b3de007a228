import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { ConfigError, loadConfig, type Config } from '../src/config';
import { connectPostgres } from '../src/db/database';
import { loadDeploymentId } from '../src/db/deployment';
import { startServer, type RunningServer } from '../src/server';
import { connectTemporal } from '../src/temporal/connection';
import { taskQueues } from '../src/temporal/task-queues';
import { smokeActivities } from './fixtures/smoke-activities';
import { smokeWorkflow } from './fixtures/smoke-workflow';
import { freePort, silentLogger, testTemporalAddress, uniqueSuffix } from './helpers/env';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { makeTestPki, startTlsProxy, type TestPki, type TlsProxy } from './helpers/tls-proxy';

const API_KEY = 'tk-secret-api-key-1234';

let pki: TestPki;
beforeAll(() => {
  pki = makeTestPki();
});

const bytes = (file: string) => new Uint8Array(readFileSync(file));

/** The message of the ConfigError that loadConfig(env) throws. */
function configError(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).not.toContain('\n');
    expect(message).not.toContain(API_KEY);
    return message;
  }
  throw new Error(`loadConfig(${JSON.stringify(env)}) did not fail`);
}

function tomlFile(text: string): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'letta-toml-')), 'temporal.toml');
  writeFileSync(file, text);
  return file;
}

describe('Temporal connection settings, read as the temporal CLI reads them', () => {
  it('starts the embedded dev server when no address, profile or config file is given', () => {
    expect(loadConfig({}).temporal).toBeUndefined();
    expect(loadConfig({ TEMPORAL_ADDRESS: '', TEMPORAL_PROFILE: '' }).temporal).toBeUndefined();
    // A temporal.toml in the home folder never turns `npm start` into a connection to a remote cluster.
    const home = mkdtempSync(path.join(os.tmpdir(), 'letta-home-'));
    mkdirSync(path.join(home, '.config', 'temporalio'), { recursive: true });
    writeFileSync(
      path.join(home, '.config', 'temporalio', 'temporal.toml'),
      '[profile.default]\naddress = "far.away:7233"\napi_key = "x"\n',
    );
    expect(loadConfig({ HOME: home }).temporal).toBeUndefined();
    expect(loadConfig({ HOME: home }).TEMPORAL_ADDRESS).toBeUndefined();
  });

  it('connects in plain text to TEMPORAL_ADDRESS alone', () => {
    const config = loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233' });
    expect(config.TEMPORAL_NAMESPACE).toBe('default');
    expect(config.temporal?.connection).toEqual({ address: 'temporal:7233' });
    expect(config.temporal?.connection.tls).toBeUndefined();
  });

  it('sends TEMPORAL_API_KEY over TLS (Temporal Cloud), unless TEMPORAL_TLS=false', () => {
    const config = loadConfig({
      TEMPORAL_ADDRESS: 'us-east-1.aws.api.temporal.io:7233',
      TEMPORAL_NAMESPACE: 'prod.a1b2c',
      TEMPORAL_API_KEY: API_KEY,
    });
    expect(config.TEMPORAL_ADDRESS).toBe('us-east-1.aws.api.temporal.io:7233');
    expect(config.TEMPORAL_NAMESPACE).toBe('prod.a1b2c');
    expect(config.temporal?.connection).toEqual({
      address: 'us-east-1.aws.api.temporal.io:7233',
      apiKey: API_KEY,
      tls: true,
    });
    expect(config.temporal?.summary).toMatchObject({ tls: true, apiKey: true, clientCertificate: false });

    const plain = loadConfig({
      TEMPORAL_ADDRESS: 'proxy:7233',
      TEMPORAL_API_KEY: API_KEY,
      TEMPORAL_TLS: 'false',
    });
    expect(plain.temporal?.connection).toMatchObject({ apiKey: API_KEY, tls: false });
  });

  it('builds mTLS options from the TEMPORAL_TLS_* files', () => {
    const config = loadConfig({
      TEMPORAL_ADDRESS: '10.0.0.5:7233',
      TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKey,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert,
      TEMPORAL_TLS_SERVER_NAME: pki.serverName,
    });
    expect(config.temporal?.connection).toEqual({
      address: '10.0.0.5:7233',
      tls: {
        serverNameOverride: pki.serverName,
        serverRootCACertificate: bytes(pki.caCert),
        clientCertPair: { crt: bytes(pki.clientCert), key: bytes(pki.clientKey) },
      },
    });
    expect(config.temporal?.summary).toMatchObject({ tls: true, clientCertificate: true, apiKey: false });
    expect(loadConfig({ TEMPORAL_ADDRESS: 'a:1', TEMPORAL_TLS: 'true' }).temporal?.connection.tls).toEqual(
      {},
    );
  });

  it('reads a profile from TEMPORAL_CONFIG_FILE, which the environment overrides', () => {
    const file = tomlFile(`
[profile.default]
address = "localhost:7233"

[profile.prod]
address = "prod.a1b2c.tmprl.cloud:7233"
namespace = "prod.a1b2c"
api_key = "${API_KEY}"

[profile.prod.tls]
server_ca_cert_path = "${pki.caCert}"
server_name = "${pki.serverName}"

[profile.mtls]
address = "temporal.internal:7233"
namespace = "agents"

[profile.mtls.tls]
client_cert_path = "${pki.clientCert}"
client_key_path = "${pki.clientKey}"
server_ca_cert_path = "${pki.caCert}"

[profile.mtls.grpc_meta]
x-team = "letta"
`);
    const prod = loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' });
    expect(prod.TEMPORAL_ADDRESS).toBe('prod.a1b2c.tmprl.cloud:7233');
    expect(prod.TEMPORAL_NAMESPACE).toBe('prod.a1b2c');
    expect(prod.temporal?.connection).toEqual({
      address: 'prod.a1b2c.tmprl.cloud:7233',
      apiKey: API_KEY,
      tls: { serverNameOverride: pki.serverName, serverRootCACertificate: bytes(pki.caCert) },
    });
    expect(prod.temporal?.summary).toMatchObject({ profile: 'prod', configFile: file });

    const mtls = loadConfig({
      TEMPORAL_CONFIG_FILE: file,
      TEMPORAL_PROFILE: 'mtls',
      TEMPORAL_NAMESPACE: 'other',
    });
    expect(mtls.TEMPORAL_NAMESPACE).toBe('other');
    expect(mtls.temporal?.connection).toEqual({
      address: 'temporal.internal:7233',
      metadata: { 'x-team': 'letta' },
      tls: {
        serverRootCACertificate: bytes(pki.caCert),
        clientCertPair: { crt: bytes(pki.clientCert), key: bytes(pki.clientKey) },
      },
    });

    // The environment wins over the profile, field by field, as in the CLI.
    const overridden = loadConfig({
      TEMPORAL_CONFIG_FILE: file,
      TEMPORAL_PROFILE: 'prod',
      TEMPORAL_ADDRESS: 'staging:7233',
      TEMPORAL_TLS_SERVER_NAME: 'staging.internal',
    });
    expect(overridden.TEMPORAL_ADDRESS).toBe('staging:7233');
    expect(overridden.temporal?.connection).toMatchObject({
      address: 'staging:7233',
      apiKey: API_KEY,
      tls: { serverNameOverride: 'staging.internal', serverRootCACertificate: bytes(pki.caCert) },
    });

    // Without TEMPORAL_PROFILE, the file's default profile.
    expect(loadConfig({ TEMPORAL_CONFIG_FILE: file }).TEMPORAL_ADDRESS).toBe('localhost:7233');
  });

  it("reads the default profile of ~/.config/temporalio/temporal.toml once there's an address", () => {
    const home = mkdtempSync(path.join(os.tmpdir(), 'letta-home-'));
    mkdirSync(path.join(home, 'cfg', 'temporalio'), { recursive: true });
    writeFileSync(
      path.join(home, 'cfg', 'temporalio', 'temporal.toml'),
      `[profile.default]\nnamespace = "from-file"\napi_key = "${API_KEY}"\n`,
    );
    const config = loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233', XDG_CONFIG_HOME: path.join(home, 'cfg') });
    expect(config.TEMPORAL_NAMESPACE).toBe('from-file');
    expect(config.temporal?.connection).toEqual({ address: 'temporal:7233', apiKey: API_KEY, tls: true });
  });

  describe('stops start-up with one line naming the setting', () => {
    it.each([
      [
        'a missing client certificate',
        { TEMPORAL_TLS_CLIENT_CERT_PATH: '/nowhere/client.pem' },
        'TEMPORAL_TLS_CLIENT_CERT_PATH="/nowhere/client.pem": cannot read the certificate file (no such file)',
      ],
      [
        'a missing CA certificate',
        { TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/nowhere/ca.pem' },
        'TEMPORAL_TLS_SERVER_CA_CERT_PATH="/nowhere/ca.pem": cannot read the certificate file (no such file)',
      ],
      [
        'a key that is not PEM',
        { TEMPORAL_TLS_CLIENT_CERT_PATH: '<client>', TEMPORAL_TLS_CLIENT_KEY_PATH: '<cert>' },
        'TEMPORAL_TLS_CLIENT_KEY_PATH="<cert>": expected a PEM private key',
      ],
      [
        'a certificate without its key',
        { TEMPORAL_TLS_CLIENT_CERT_PATH: '<client>' },
        'TEMPORAL_TLS_CLIENT_KEY_PATH="": required with TEMPORAL_TLS_CLIENT_CERT_PATH',
      ],
      [
        'host verification turned off',
        { TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' },
        'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION="true": not supported',
      ],
      ['a bad TEMPORAL_TLS', { TEMPORAL_TLS: 'yes' }, 'TEMPORAL_TLS="yes": expected true or false'],
    ])('%s', (_, env, expected) => {
      const resolved = Object.fromEntries(
        Object.entries(env).map(([name, value]) => [
          name,
          value === '<client>' ? pki.clientCert : value === '<cert>' ? pki.caCert : value,
        ]),
      );
      const message = configError({ TEMPORAL_ADDRESS: 'temporal:7233', ...resolved });
      expect(message).toMatch(/^Invalid configuration: /);
      expect(message).toContain(expected.replace('<cert>', pki.caCert));
    });

    it('a profile that does not exist, listing the ones that do', () => {
      const file = tomlFile('[profile.default]\naddress = "a:1"\n[profile.prod]\naddress = "b:2"\n');
      expect(configError({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'staging' })).toBe(
        `Invalid configuration: TEMPORAL_PROFILE="staging": no such profile in TEMPORAL_CONFIG_FILE=${JSON.stringify(file)} (it has: default, prod)`,
      );
      expect(configError({ TEMPORAL_PROFILE: 'prod', HOME: '/nonexistent-home' })).toContain(
        'TEMPORAL_PROFILE="prod": no such profile in /nonexistent-home/.config/temporalio/temporal.toml',
      );
    });

    it('a config file that is missing or not TOML', () => {
      expect(configError({ TEMPORAL_CONFIG_FILE: '/nowhere/temporal.toml' })).toBe(
        'Invalid configuration: TEMPORAL_CONFIG_FILE="/nowhere/temporal.toml": no such file',
      );
      const broken = tomlFile('[profile.default\naddress = 1\n');
      expect(configError({ TEMPORAL_CONFIG_FILE: broken })).toMatch(
        /^Invalid configuration: TEMPORAL_CONFIG_FILE=".*": not a valid temporal.toml \(line 1\)/,
      );
    });

    it("a profile's missing certificate file, named by its field, profile and file", () => {
      const file = tomlFile(
        `[profile.prod]\naddress = "b:2"\napi_key = "${API_KEY}"\n[profile.prod.tls]\nserver_ca_cert_path = "/nowhere/ca.pem"\n`,
      );
      expect(configError({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' })).toBe(
        `Invalid configuration: tls.server_ca_cert_path in profile "prod" of TEMPORAL_CONFIG_FILE=${JSON.stringify(file)}="/nowhere/ca.pem": cannot read the certificate file (no such file)`,
      );
    });

    it('a profile without an address, or with a bad one', () => {
      const file = tomlFile('[profile.ns]\nnamespace = "x"\n[profile.bad]\naddress = "https://x:1"\n');
      expect(configError({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'ns' })).toContain(
        'TEMPORAL_ADDRESS="": required, and profile "ns" of',
      );
      expect(configError({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'bad' })).toContain(
        'address "https://x:1": expected host:port',
      );
    });

    it('an API key or certificate given for the embedded dev server', () => {
      expect(configError({ TEMPORAL_API_KEY: API_KEY })).toBe(
        'Invalid configuration: TEMPORAL_API_KEY: needs TEMPORAL_ADDRESS or TEMPORAL_PROFILE (the embedded dev server takes no API key or TLS)',
      );
      expect(configError({ TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert })).toContain(
        'TEMPORAL_TLS_CLIENT_CERT_PATH: needs TEMPORAL_ADDRESS',
      );
    });
  });
});

describe('a server on a TLS-secured Temporal (mTLS + API key) and PostgreSQL over TLS', () => {
  // `temporal server start-dev` has no TLS options, so a TLS-terminating proxy that requires a client
  // certificate stands in front of the run's dev server and records what each call carried.
  let proxy: TlsProxy;
  let schema: TestSchema;
  let server: RunningServer | undefined;

  beforeAll(async () => {
    proxy = await startTlsProxy(pki, testTemporalAddress());
    schema = await createTestSchema();
  });
  afterAll(async () => {
    await server?.stop();
    await schema?.drop();
    await proxy?.close();
  });

  /** The schema's DATABASE_URL, by the host name in the server's certificate, verified against it. */
  const tlsDatabaseUrl = (mode: string) => {
    const url = new URL(schema.url);
    if (url.hostname === '127.0.0.1') url.hostname = 'localhost';
    url.searchParams.set('sslmode', mode);
    url.searchParams.set('sslrootcert', '/etc/ssl/certs/ssl-cert-snakeoil.pem');
    return url.toString();
  };

  it('runs a workflow end to end: the client and the workers connect with the certificate and key', async () => {
    const prefix = `tls-${uniqueSuffix()}-`;
    const config: Config = loadConfig({
      LOG_LEVEL: 'silent',
      DATABASE_URL: tlsDatabaseUrl('verify-full'),
      TEMPORAL_ADDRESS: proxy.address,
      TEMPORAL_API_KEY: API_KEY,
      TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKey,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert,
      TEMPORAL_TLS_SERVER_NAME: pki.serverName,
      TASK_QUEUE_PREFIX: prefix,
      PORT: String(await freePort()),
    });
    server = await startServer(config, silentLogger(), {
      workflowsPath: require.resolve('./fixtures/smoke-workflow'),
      activities: ({ db }) => smokeActivities(db),
    });
    const [{ ssl }] = await server.db.query<{ ssl: boolean }>(
      'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
    );
    expect(ssl).toBe(true);

    const client = new Client({ connection: server.connection });
    const result = await client.workflow.execute(smokeWorkflow, {
      taskQueue: taskQueues(prefix, await loadDeploymentId(server.db)).agent,
      workflowId: `tls-${uniqueSuffix()}`,
      args: ['hello'],
    });
    expect(result).toMatch(/^hello from /);

    const calls = (name: string) => proxy.requests.filter((request) => request.path.endsWith(`/${name}`));
    // The workers' polls and the client's calls all went through the proxy, each with the key and cert.
    for (const name of ['StartWorkflowExecution', 'PollWorkflowTaskQueue', 'PollActivityTaskQueue']) {
      expect([name, calls(name).length > 0]).toEqual([name, true]);
    }
    expect(proxy.requests.every((request) => request.authorization === `Bearer ${API_KEY}`)).toBe(true);
    expect(proxy.requests.every((request) => request.clientCertificate === 'client')).toBe(true);
  });

  it('fails with a clear error when the server is not the one the CA vouches for', async () => {
    const base = {
      TEMPORAL_ADDRESS: proxy.address,
      TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKey,
      TEMPORAL_TLS_SERVER_NAME: pki.serverName,
    };
    const attempt = (env: Record<string, string>) =>
      connectTemporal(loadConfig({ ...base, ...env }).temporal!.connection, 60_000);
    // Certificate errors are not retried until the timeout: they would not go away.
    await expect(attempt({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.otherCaCert })).rejects.toThrow(
      `Temporal at ${proxy.address} is not reachable over TLS: the server's certificate is not signed by a CA we trust (TEMPORAL_TLS_SERVER_CA_CERT_PATH): `,
    );
    await expect(
      attempt({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert, TEMPORAL_TLS_SERVER_NAME: 'other.test' }),
    ).rejects.toThrow("the server's certificate is not for this host name (TEMPORAL_TLS_SERVER_NAME)");
  });

  it('is refused without a client certificate (mTLS)', async () => {
    const config = loadConfig({
      TEMPORAL_ADDRESS: proxy.address,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert,
      TEMPORAL_TLS_SERVER_NAME: pki.serverName,
    });
    await expect(connectTemporal(config.temporal!.connection, 60_000)).rejects.toThrow(
      'the server refused our client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH / TEMPORAL_TLS_CLIENT_KEY_PATH)',
    );
  });

  it('fails with a clear error when TLS meets a plain-text Temporal', async () => {
    const config = loadConfig({ TEMPORAL_ADDRESS: testTemporalAddress(), TEMPORAL_TLS: 'true' });
    await expect(connectTemporal(config.temporal!.connection, 60_000)).rejects.toThrow(
      `Temporal at ${testTemporalAddress()} is not reachable over TLS: the server does not speak TLS (set TEMPORAL_TLS=false for a plain-text frontend)`,
    );
  });

  it("passes DATABASE_URL's sslmode and sslrootcert through to PostgreSQL", async () => {
    const sslOf = async (url: string) => {
      const db = connectPostgres(url, 1);
      try {
        const [{ ssl }] = await db.query<{ ssl: boolean }>(
          'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
        );
        return ssl;
      } finally {
        await db.close();
      }
    };
    expect(await sslOf(tlsDatabaseUrl('verify-full'))).toBe(true);
    const plain = new URL(schema.url);
    plain.searchParams.set('sslmode', 'disable');
    expect(await sslOf(plain.toString())).toBe(false);
    // verify-full checks the host name: 127.0.0.1 is not in the certificate.
    const byIp = new URL(tlsDatabaseUrl('verify-full'));
    byIp.hostname = '127.0.0.1';
    await expect(sslOf(byIp.toString())).rejects.toThrow(/altnames|certificate/);
  });
});
