/**
 * scripts/install-temporal.sh against a local server that serves a release as GitHub does
 * (`v<version>/checksums.txt` and the platform's archive): the archive is used only when its SHA-256
 * matches, the fallback to a Go build is decided within seconds when downloads fail, and without Go
 * either the script names the fix.
 */
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { projectRoot } from '../src/paths';
import { TEMPORAL_CLI_VERSION } from '../src/temporal/cli-binary';

const SCRIPT = path.join(projectRoot, 'scripts', 'install-temporal.sh');
const version = TEMPORAL_CLI_VERSION;
const platform = `${os.platform()}_${os.arch() === 'x64' ? 'amd64' : 'arm64'}`;
const archiveName = `temporal_cli_${version}_${platform}.tar.gz`;

/** A release archive whose `temporal` prints a version, and its SHA-256. */
function fakeRelease(dir: string): { archive: Buffer; sha256: string } {
  const staging = fs.mkdtempSync(path.join(dir, 'staging-'));
  fs.writeFileSync(
    path.join(staging, 'temporal'),
    `#!/bin/sh\necho "temporal version ${version} (from the archive)"\n`,
    {
      mode: 0o755,
    },
  );
  fs.writeFileSync(path.join(staging, 'LICENSE'), 'MIT\n');
  const file = path.join(dir, archiveName);
  execFileSync('tar', ['-czf', file, '-C', staging, 'temporal', 'LICENSE']);
  const archive = fs.readFileSync(file);
  return { archive, sha256: crypto.createHash('sha256').update(archive).digest('hex') };
}

function serveRelease(files: Record<string, Buffer | string>): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const body = files[req.url ?? ''];
    res.writeHead(body === undefined ? 404 : 200).end(body);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function runScript(
  env: Record<string, string>,
): Promise<{ code: number | null; output: string; ms: number }> {
  const started = Date.now();
  const child = spawn('bash', [SCRIPT], {
    env: { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', GO_BIN: '/nonexistent/go', ...env },
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  return new Promise((resolve) =>
    child.on('exit', (code) => resolve({ code, output, ms: Date.now() - started })),
  );
}

describe('scripts/install-temporal.sh', () => {
  let dir: string;
  let release: { archive: Buffer; sha256: string };
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'install-temporal-'));
    release = fakeRelease(dir);
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const paths = () => ({
    TEMPORAL_CLI_CACHE: path.join(dir, 'cache'),
    TEMPORAL_CLI_BIN_DIR: path.join(dir, 'bin'),
  });

  it('installs the version the server expects', () => {
    expect(fs.readFileSync(SCRIPT, 'utf8')).toContain(`\nversion=${version}\n`);
  });

  it('downloads the release archive, checks its SHA-256 and links the binary', async () => {
    const server = await serveRelease({
      [`/v${version}/checksums.txt`]: `${'0'.repeat(64)}  other.tar.gz\n${release.sha256}  ${archiveName}\n`,
      [`/v${version}/${archiveName}`]: release.archive,
    });
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const { code, output } = await runScript({ ...paths(), TEMPORAL_CLI_DOWNLOAD_URL: url });
      expect(output).toContain(`checksum verified (${release.sha256})`);
      expect(code).toBe(0);
      const installed = execFileSync(path.join(dir, 'bin', 'temporal'), ['--version'], { encoding: 'utf8' });
      expect(installed).toContain('(from the archive)');
      // Cached outside the clone: the archive is gone, the binary stays.
      expect(fs.readdirSync(path.join(dir, 'cache', `temporal-${version}`))).toEqual(['temporal']);
    } finally {
      server.close();
    }
  });

  it('refuses an archive whose checksum does not match, and says what to do without Go', async () => {
    const server = await serveRelease({
      [`/v${version}/checksums.txt`]: `${'1'.repeat(64)}  ${archiveName}\n`,
      [`/v${version}/${archiveName}`]: release.archive,
    });
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const { code, output } = await runScript({ ...paths(), TEMPORAL_CLI_DOWNLOAD_URL: url });
      expect(output).toContain(`checksum mismatch for ${archiveName}`);
      expect(output).toContain('falling back to a build with Go');
      expect(output).toContain('Go is not installed either');
      expect(output).toContain('Fix: put a temporal binary on PATH or set TEMPORAL_CLI_PATH');
      expect(code).not.toBe(0);
      expect(fs.existsSync(path.join(dir, 'bin', 'temporal'))).toBe(false);
    } finally {
      server.close();
    }
  });

  it('decides within seconds that downloads fail here', async () => {
    const { code, output, ms } = await runScript({
      ...paths(),
      TEMPORAL_CLI_DOWNLOAD_URL: 'http://127.0.0.1:1',
    });
    expect(output).toContain('could not download checksums.txt (offline, or downloads blocked?)');
    expect(output).toContain('falling back to a build with Go');
    expect(code).not.toBe(0);
    expect(ms).toBeLessThan(15_000);
  });
});
