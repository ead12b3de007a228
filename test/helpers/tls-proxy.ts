import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';

/** A CA and the server and client certificates it signed, as PEM files in a temporary folder. */
export interface TestPki {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A CA that signed nothing here: trusting it instead of `caCert` must fail verification. */
  otherCaCert: string;
  /** The DNS name in the server certificate (not 127.0.0.1: TEMPORAL_TLS_SERVER_NAME must say it). */
  serverName: string;
}

/** Makes a test PKI with the openssl CLI (EC P-256 keys, PKCS#8, as rustls and Node both read them). */
export function makeTestPki(serverName = 'temporal.test'): TestPki {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'letta-tls-'));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const newKey = (name: string) =>
    openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file(name));
  const ca = (name: string) => {
    newKey(`${name}.key`);
    openssl(
      'req', '-x509', '-new', '-key', file(`${name}.key`), '-subj', `/CN=${name}`, '-days', '2',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
      '-out', file(`${name}.pem`),
    ); // prettier-ignore
  };
  const leaf = (name: string, extensions: string) => {
    newKey(`${name}.key`);
    openssl('req', '-new', '-key', file(`${name}.key`), '-subj', `/CN=${name}`, '-out', file(`${name}.csr`));
    writeFileSync(file(`${name}.ext`), extensions);
    openssl(
      'x509', '-req', '-in', file(`${name}.csr`), '-CA', file('ca.pem'), '-CAkey', file('ca.key'),
      '-CAcreateserial', '-days', '2', '-extfile', file(`${name}.ext`), '-out', file(`${name}.pem`),
    ); // prettier-ignore
  };
  ca('ca');
  ca('other-ca');
  leaf(
    'server',
    `basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:${serverName}\n`,
  );
  leaf('client', 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n');
  return {
    dir,
    caCert: file('ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server.key'),
    clientCert: file('client.pem'),
    clientKey: file('client.key'),
    otherCaCert: file('other-ca.pem'),
    serverName,
  };
}

export interface SeenRequest {
  path: string;
  authorization?: string;
  /** The subject CN of the client certificate the caller presented. */
  clientCertificate?: string;
}

export interface TlsProxy {
  address: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

/**
 * A TLS-terminating gRPC proxy in front of a plaintext Temporal frontend: `temporal server start-dev`
 * cannot serve TLS itself. It requires a client certificate signed by `pki.caCert` (mTLS) and records
 * each call's path, authorization header and client certificate, so a test sees what the SDK sent.
 */
export async function startTlsProxy(pki: TestPki, upstream: string): Promise<TlsProxy> {
  const requests: SeenRequest[] = [];
  const upstreamSession = http2.connect(`http://${upstream}`);
  upstreamSession.on('error', () => {});
  const server = http2.createSecureServer({
    key: readFileSync(pki.serverKey),
    cert: readFileSync(pki.serverCert),
    ca: readFileSync(pki.caCert),
    requestCert: true,
    rejectUnauthorized: true,
  });
  server.on('sessionError', () => {});
  server.on('stream', (stream, headers) => {
    const peer = (stream.session?.socket as TLSSocket | undefined)?.getPeerCertificate();
    requests.push({
      path: String(headers[':path']),
      authorization: headers.authorization as string | undefined,
      clientCertificate: peer?.subject?.CN as string | undefined,
    });
    const forwarded: http2.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers))
      if (!name.startsWith(':') || name === ':method' || name === ':path') forwarded[name] = value;
    const call = upstreamSession.request(forwarded);
    let trailers: http2.IncomingHttpHeaders = {};
    call.on('trailers', (received) => (trailers = received));
    call.on('response', (received) => {
      const response: http2.OutgoingHttpHeaders = { ...received };
      if (stream.destroyed) return;
      if (call.readableEnded || 'grpc-status' in received) {
        stream.respond(response, { endStream: true });
        return;
      }
      stream.respond(response, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers(withoutPseudo(trailers)));
      call.pipe(stream);
    });
    stream.pipe(call);
    call.on('error', () => stream.destroy());
    stream.on('error', () => call.destroy());
    stream.on('close', () => call.close());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: async () => {
      for (const session of sessions) session.destroy();
      upstreamSession.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function withoutPseudo(headers: http2.IncomingHttpHeaders): http2.OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !name.startsWith(':')));
}
