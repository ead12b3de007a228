import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Connects to a Temporal frontend, retrying until `timeoutMs` passes: in a compose deployment the
 * server often comes up after us. One NativeConnection serves both the worker and the client, which
 * is what eager workflow start needs. `target` is an address, or the options envconfig built for a
 * secured cluster (TLS, mTLS certificates, API key: src/temporal/env-config.ts).
 */
export async function connectTemporal(
  target: string | (NativeConnectionOptions & { address: string }),
  timeoutMs: number,
): Promise<NativeConnection> {
  const options = typeof target === 'string' ? { address: target } : target;
  const { address } = options;
  const secured = options.tls ? ' over TLS' : '';
  const deadline = Date.now() + timeoutMs;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2_000)) {
    let connection: NativeConnection | undefined;
    try {
      connection = await NativeConnection.connect(options);
      await connection.workflowService.getSystemInfo({});
      return connection;
    } catch (error) {
      await connection?.close().catch(() => {});
      // A TLS setting that does not fit the server will not fit it later either: say so at once.
      const hint = options.tls ? tlsHint(errorText(error)) : undefined;
      if (hint)
        throw new Error(`Temporal at ${address} is not reachable${secured}: ${hint}: ${errorText(error)}`);
      if (Date.now() + delay > deadline) {
        throw new Error(
          `Temporal at ${address} is not reachable${secured} after ${timeoutMs} ms: ${errorText(error)}`,
        );
      }
      await sleep(delay);
    }
  }
}

/** What a TLS failure of the Temporal SDK's (rustls) means in our settings' words, when it is one. */
function tlsHint(message: string): string | undefined {
  if (/InvalidContentType|CorruptMessage/.test(message))
    return 'the server does not speak TLS (set TEMPORAL_TLS=false for a plain-text frontend)';
  if (/UnknownIssuer|BadSignature/.test(message))
    return "the server's certificate is not signed by a CA we trust (TEMPORAL_TLS_SERVER_CA_CERT_PATH)";
  if (/NotValidForName/.test(message))
    return "the server's certificate is not for this host name (TEMPORAL_TLS_SERVER_NAME)";
  if (/Expired|NotValidYet/.test(message)) return "the server's certificate has expired or is not valid yet";
  if (/CertificateRequired|BadCertificate|UnknownCA|CertificateUnknown|DecryptError/.test(message))
    return 'the server refused our client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH / TEMPORAL_TLS_CLIENT_KEY_PATH)';
  return undefined;
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
