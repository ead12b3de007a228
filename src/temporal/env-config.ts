import { X509Certificate, createPrivateKey } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  loadClientConfig,
  loadClientConfigProfile,
  toClientOptions,
  type ClientConfigProfile,
  type ConfigDataSource,
} from '@temporalio/envconfig';
import type { NativeConnectionOptions } from '@temporalio/worker';

/**
 * Where an external Temporal is and how to reach it, read the way the `temporal` CLI reads it
 * (@temporalio/envconfig): a profile from a temporal.toml (TEMPORAL_CONFIG_FILE, else
 * ~/.config/temporalio/temporal.toml; TEMPORAL_PROFILE, else `default`), overridden by TEMPORAL_ADDRESS,
 * TEMPORAL_NAMESPACE, TEMPORAL_API_KEY and TEMPORAL_TLS*.
 */
export interface TemporalTarget {
  address: string;
  namespace: string;
  /** What the one NativeConnection (the client's and every worker's) connects with. */
  connection: NativeConnectionOptions & { address: string };
  /** For the log: where the settings came from, and how the connection is secured. */
  summary: {
    profile?: string;
    configFile?: string;
    tls: boolean;
    clientCertificate: boolean;
    apiKey: boolean;
  };
}

/** A bad Temporal connection setting; the message names it on one line, as ConfigError's do. */
export class TemporalSettingsError extends Error {
  override name = 'TemporalSettingsError';
}

type Env = Record<string, string | undefined>;

/** Variables that secure a connection: meaningless for the embedded dev server. */
const CONNECTION_SECRETS = [
  'TEMPORAL_API_KEY',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_CERT_DATA',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_DATA',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
  'TEMPORAL_TLS_SERVER_NAME',
];

const TLS_MATERIAL = [
  { field: 'clientCert', env: 'TEMPORAL_TLS_CLIENT_CERT', toml: 'client_cert', kind: 'certificate' },
  { field: 'clientKey', env: 'TEMPORAL_TLS_CLIENT_KEY', toml: 'client_key', kind: 'private key' },
  { field: 'serverCACert', env: 'TEMPORAL_TLS_SERVER_CA_CERT', toml: 'server_ca_cert', kind: 'certificate' },
] as const;

/**
 * The external Temporal to connect to, or undefined for the embedded dev server: that is started
 * when none of TEMPORAL_ADDRESS, TEMPORAL_PROFILE and TEMPORAL_CONFIG_FILE is set (so a temporal.toml
 * in the home folder never turns `npm start` into a connection to a remote cluster). Reads the
 * certificate files, so a missing or unreadable one stops start-up here, named.
 */
export function temporalTarget(rawEnv: Env): TemporalTarget | undefined {
  const env = withoutEmpty(rawEnv);
  if (!env.TEMPORAL_ADDRESS && !env.TEMPORAL_PROFILE && !env.TEMPORAL_CONFIG_FILE) {
    const stray = CONNECTION_SECRETS.find((name) => env[name] !== undefined);
    if (stray)
      throw new TemporalSettingsError(
        `${stray}: needs TEMPORAL_ADDRESS or TEMPORAL_PROFILE (the embedded dev server takes no API key or TLS)`,
      );
    return undefined;
  }
  if (isTrue(env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION))
    throw new TemporalSettingsError(
      `TEMPORAL_TLS_DISABLE_HOST_VERIFICATION=${JSON.stringify(env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION)}: ` +
        "not supported by Temporal's TypeScript SDK; set TEMPORAL_TLS_SERVER_NAME to a name in the server's certificate",
    );

  const configFile = env.TEMPORAL_CONFIG_FILE ?? defaultConfigFile(env);
  const fileSetting = env.TEMPORAL_CONFIG_FILE
    ? `TEMPORAL_CONFIG_FILE=${JSON.stringify(env.TEMPORAL_CONFIG_FILE)}`
    : `${configFile} (the default TEMPORAL_CONFIG_FILE)`;
  if (env.TEMPORAL_CONFIG_FILE && !existsSync(env.TEMPORAL_CONFIG_FILE))
    throw new TemporalSettingsError(`${fileSetting}: no such file`);
  const profileName = env.TEMPORAL_PROFILE ?? 'default';
  const where = `profile "${profileName}" of ${fileSetting}`;

  let profile: ClientConfigProfile;
  try {
    profile = loadClientConfigProfile({ overrideEnvVars: env as Record<string, string> });
  } catch (error) {
    const message = oneLine(error);
    if (/^Profile '.*' not found/.test(message)) {
      const names = profileNames(env);
      throw new TemporalSettingsError(
        `TEMPORAL_PROFILE=${JSON.stringify(profileName)}: no such profile in ${fileSetting}` +
          (names === undefined ? ' (no such file)' : ` (it has: ${names.join(', ') || 'none'})`),
      );
    }
    if (message.startsWith('Invalid TOML document')) {
      const line = (error as { line?: number }).line;
      throw new TemporalSettingsError(
        `${fileSetting}: not a valid temporal.toml${line ? ` (line ${line})` : ''}: ${message.replace(/^Invalid TOML document: /, '')}`,
      );
    }
    throw new TemporalSettingsError(`Temporal settings (${where}): ${message}`);
  }

  if (!profile.address)
    throw new TemporalSettingsError(
      `TEMPORAL_ADDRESS="": required, and ${where} has no address (expected host:port, e.g. temporal:7233)`,
    );
  if (!/^[^\s:/]+:\d{1,5}$/.test(profile.address))
    throw new TemporalSettingsError(
      `${where}: address ${JSON.stringify(profile.address)}: expected host:port, e.g. temporal:7233`,
    );

  const tlsDisabled = profile.tls?.disabled === true;
  if (!tlsDisabled) checkTlsMaterial(profile, env, where);

  const { connectionOptions, namespace } = toClientOptions(profile);
  const tls = connectionOptions.tls;
  return {
    address: profile.address,
    namespace: namespace ?? 'default',
    connection: { ...connectionOptions, address: profile.address },
    summary: {
      profile: env.TEMPORAL_PROFILE ?? (profileNames(env)?.includes('default') ? 'default' : undefined),
      configFile: existsSync(configFile ?? '') ? configFile : undefined,
      tls: Boolean(tls),
      clientCertificate: typeof tls === 'object' && tls !== null && tls.clientCertPair !== undefined,
      apiKey: connectionOptions.apiKey !== undefined,
    },
  };
}

/** Each certificate and key must be readable PEM, and a client certificate comes with its key. */
function checkTlsMaterial(profile: ClientConfigProfile, env: Env, where: string): void {
  const settingOf = (item: (typeof TLS_MATERIAL)[number], source: ConfigDataSource) => {
    const suffix = 'path' in source ? 'PATH' : 'DATA';
    const name = `${item.env}_${suffix}`;
    return env[name] !== undefined ? name : `tls.${item.toml}_${suffix.toLowerCase()} in ${where}`;
  };
  for (const item of TLS_MATERIAL) {
    const source = profile.tls?.[item.field];
    if (!source) continue;
    const setting = settingOf(item, source);
    let pem: Buffer;
    if ('path' in source) {
      const shown = `${setting}=${JSON.stringify(source.path)}`;
      try {
        pem = readFileSync(source.path);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        throw new TemporalSettingsError(
          `${shown}: cannot read the ${item.kind} file (${code === 'ENOENT' ? 'no such file' : (code ?? oneLine(error))})`,
        );
      }
      if (!isPem(pem, item.kind)) throw new TemporalSettingsError(`${shown}: expected a PEM ${item.kind}`);
    } else {
      pem = Buffer.from(source.data);
      if (!isPem(pem, item.kind)) throw new TemporalSettingsError(`${setting}: expected a PEM ${item.kind}`);
    }
  }
  const cert = profile.tls?.clientCert;
  const key = profile.tls?.clientKey;
  if (cert && !key)
    throw new TemporalSettingsError(
      `TEMPORAL_TLS_CLIENT_KEY_PATH="": required with ${settingOf(TLS_MATERIAL[0], cert)} (mTLS needs the key too)`,
    );
  if (key && !cert)
    throw new TemporalSettingsError(
      `TEMPORAL_TLS_CLIENT_CERT_PATH="": required with ${settingOf(TLS_MATERIAL[1], key)} (mTLS needs the certificate too)`,
    );
}

function isPem(pem: Buffer, kind: 'certificate' | 'private key'): boolean {
  try {
    if (kind === 'certificate') new X509Certificate(pem);
    else createPrivateKey(pem);
    return true;
  } catch {
    return false;
  }
}

/** The config file's profile names, or undefined when there is no file. */
function profileNames(env: Env): string[] | undefined {
  const file = env.TEMPORAL_CONFIG_FILE ?? defaultConfigFile(env);
  if (!file || !existsSync(file)) return undefined;
  try {
    return Object.keys(loadClientConfig({ overrideEnvVars: env as Record<string, string> }).profiles);
  } catch {
    return undefined;
  }
}

/** Where envconfig looks when TEMPORAL_CONFIG_FILE is unset (on Linux; macOS and Windows differ). */
function defaultConfigFile(env: Env): string | undefined {
  if (os.platform() === 'darwin')
    return env.HOME && path.join(env.HOME, 'Library', 'Application Support', 'temporalio', 'temporal.toml');
  if (os.platform() === 'win32') return env.APPDATA && path.join(env.APPDATA, 'temporalio', 'temporal.toml');
  const configHome =
    env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : undefined;
  const base = configHome ?? (env.HOME && path.join(env.HOME, '.config'));
  return base && path.join(base, 'temporalio', 'temporal.toml');
}

/**
 * Empty values count as unset, as everywhere in our configuration (envconfig would take an empty
 * TEMPORAL_ADDRESS as the address ""); TEMPORAL_GRPC_META_* keep theirs, where empty removes a header.
 */
function withoutEmpty(env: Env): Env {
  return Object.fromEntries(
    Object.entries(env).filter(
      ([name, value]) => value !== undefined && (value !== '' || name.startsWith('TEMPORAL_GRPC_META_')),
    ),
  );
}

const isTrue = (value: string | undefined) => value === 'true' || value === '1';

function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0]!.trim();
}
