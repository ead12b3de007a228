import { execFile, execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../src/config';
import { projectRoot } from '../src/paths';
import {
  collectPythonEnvs,
  pythonEnvironment,
  pythonEnvOptions,
  requirementSpecs,
  resolvePipPython,
  type PythonEnvOptions,
} from '../src/sandbox/python-env';
import { ToolEnvironmentError } from '../src/sandbox/tool-environment-error';
import { eventually } from './helpers/eventually';
import { processesMentioning } from './helpers/process';
import { writeSimpleIndex, writeWheel } from './helpers/wheels';

const DAY = 24 * 60 * 60 * 1000;
const HASH = /^[0-9a-f]{64}$/;

/** Venvs for tools' pip requirements, installed from wheels written here: nothing comes from PyPI. */
describe('python environments for tool requirements', () => {
  let work: string;
  let root: string;
  let wheels: string;
  let slug: string;
  let depUser: string;

  beforeEach(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'python-env-test-'));
    root = path.join(work, 'envs');
    wheels = path.join(work, 'wheels');
    slug = writeWheel(wheels, { name: 'tinyslug', version: '1.2.0' });
    depUser = writeWheel(wheels, { name: 'tinydep-user', version: '0.1.0', requires: ['tinyslug>=1.0'] });
  });
  afterEach(() => fs.rmSync(work, { recursive: true, force: true }));

  /** A pip Python that logs each run (and may dawdle first), to tell builds from reuse. */
  const countingPip = async (delaySeconds = 0) => {
    const script = path.join(work, 'counting-python');
    const pip = await resolvePipPython({});
    fs.writeFileSync(
      script,
      `#!/bin/sh\necho run >> '${work}/pip-runs'\nsleep ${delaySeconds}\nexec '${pip}' "$@"\n`,
      { mode: 0o755 },
    );
    return script;
  };
  const pipRuns = () =>
    fs.existsSync(`${work}/pip-runs`)
      ? fs.readFileSync(`${work}/pip-runs`, 'utf8').trim().split('\n').length
      : 0;

  const options = (overrides: Partial<PythonEnvOptions> = {}): PythonEnvOptions => ({
    root,
    python: '/usr/bin/python3',
    findLinks: [wheels],
    noIndex: true,
    installTimeoutMs: 60_000,
    maxAgeMs: DAY,
    ...overrides,
  });
  const importedVersion = (python: string, module: string) =>
    execFileSync(python, ['-I', '-c', `import ${module}; print(${module}.VERSION)`], {
      encoding: 'utf8',
    }).trim();
  /** Anything in the root besides finished venvs: locks, temporary folders. */
  const leftovers = () => fs.readdirSync(root).filter((name) => !HASH.test(name));
  const setLastUsed = (dir: string, time: Date) => fs.utimesSync(path.join(dir, 'last-used'), time, time);

  it('has no environment for a tool without requirements', async () => {
    expect(await pythonEnvironment([], options())).toBeNull();
    expect(fs.existsSync(root)).toBe(false);
  });

  it('installs from a find-links folder into a venv of the sandbox Python, with the pip it finds', async () => {
    const env = await pythonEnvironment([{ name: 'tinyslug', version: '1.2.0' }], options());

    expect(env).not.toBeNull();
    expect(path.dirname(env!.root)).toBe(root);
    expect(path.basename(env!.root)).toMatch(HASH);
    expect(env!.python).toBe(path.join(env!.root, 'bin', 'python'));
    expect(importedVersion(env!.python, 'tinyslug')).toBe('1.2.0');
    // The interpreter is the system one, under the /usr the sandbox mounts; the venv has no pip.
    expect(fs.realpathSync(env!.python)).toMatch(/^\/usr\/bin\/python3/);
    expect(fs.readFileSync(path.join(env!.root, 'pyvenv.cfg'), 'utf8')).toContain('home = /usr/bin');
    expect(fs.existsSync(path.join(env!.root, 'bin', 'pip'))).toBe(false);
    expect(leftovers()).toEqual([]);
  });

  it('installs from a PEP 503 index at a file:// URL', async () => {
    const indexUrl = writeSimpleIndex(path.join(work, 'simple'), [slug]);

    const env = await pythonEnvironment(
      [{ name: 'tinyslug' }],
      options({ indexUrl, findLinks: [], noIndex: false }),
    );

    expect(importedVersion(env!.python, 'tinyslug')).toBe('1.2.0');
  });

  it("installs a package's dependencies along with it", async () => {
    const env = await pythonEnvironment([{ name: 'tinydep-user', version: '0.1.0' }], options());

    expect(importedVersion(env!.python, 'tinydep_user')).toBe('0.1.0');
    expect(importedVersion(env!.python, 'tinyslug')).toBe('1.2.0');
  });

  it('installs a dependency chain from an index too', async () => {
    const indexUrl = writeSimpleIndex(path.join(work, 'simple'), [slug, depUser]);

    const env = await pythonEnvironment(
      [{ name: 'tinydep-user' }],
      options({ indexUrl, findLinks: [], noIndex: false }),
    );

    expect(importedVersion(env!.python, 'tinyslug')).toBe('1.2.0');
  });

  it('looks in the find-links besides the index, as pip does', async () => {
    const indexUrl = writeSimpleIndex(path.join(work, 'simple'), [depUser]);
    const slugOnly = path.join(work, 'slug-only');
    fs.mkdirSync(slugOnly);
    fs.copyFileSync(slug, path.join(slugOnly, path.basename(slug)));

    const env = await pythonEnvironment(
      [{ name: 'tinydep-user' }],
      options({ indexUrl, findLinks: [slugOnly], noIndex: false }),
    );

    expect(importedVersion(env!.python, 'tinydep_user')).toBe('0.1.0');
    expect(importedVersion(env!.python, 'tinyslug')).toBe('1.2.0');
  });

  it('builds once per set of requirements, however they are spelled and ordered', async () => {
    const pipPython = await countingPip();
    const first = await pythonEnvironment(
      [{ name: 'TinySlug', version: '1.2.0' }, { name: 'tinydep_user' }],
      options({ pipPython }),
    );
    const started = Date.now();
    const second = await pythonEnvironment(
      [
        { name: 'tinydep-user', version: null },
        { name: 'tinyslug', version: ' 1.2.0 ' },
      ],
      options({ pipPython }),
    );

    expect(Date.now() - started).toBeLessThan(1000);
    expect(second).toEqual(first);
    expect(pipRuns()).toBe(1);

    // Other requirements, or another place to look for them, are another venv.
    const other = await pythonEnvironment([{ name: 'tinyslug' }], options({ pipPython }));
    const elsewhere = await pythonEnvironment(
      [{ name: 'tinyslug' }],
      options({ pipPython, findLinks: [wheels, path.join(work, 'more-wheels')] }),
    );
    expect(new Set([first!.root, other!.root, elsewhere!.root]).size).toBe(3);
    expect(pipRuns()).toBe(3);
  });

  it('shares one build between concurrent callers', async () => {
    const pipPython = await countingPip(1);
    const requirements = [{ name: 'tinyslug', version: '1.2.0' }];

    const [a, b] = await Promise.all([
      pythonEnvironment(requirements, options({ pipPython })),
      pythonEnvironment(requirements, options({ pipPython })),
    ]);

    expect(a).toEqual(b);
    expect(pipRuns()).toBe(1);
    expect(importedVersion(a!.python, 'tinyslug')).toBe('1.2.0');
  });

  it('shares one build between processes', async () => {
    const pipPython = await countingPip(1);
    const module = path.join(projectRoot, 'dist', 'src', 'sandbox', 'python-env.js');
    const script =
      'require(process.argv[1]).pythonEnvironment(JSON.parse(process.argv[2]), JSON.parse(process.argv[3]))' +
      '.then((env) => console.log(env.root))';
    const args = [
      '-e',
      script,
      module,
      JSON.stringify([{ name: 'tinyslug', version: '1.2.0' }]),
      JSON.stringify(options({ pipPython })),
    ];

    const outputs = await Promise.all([1, 2].map(() => promisify(execFile)('node', args)));

    const roots = outputs.map(({ stdout }) => stdout.trim());
    expect(path.basename(roots[0]!)).toMatch(HASH);
    expect(roots[1]).toBe(roots[0]);
    expect(pipRuns()).toBe(1);
    expect(leftovers()).toEqual([]);
  });

  it('takes over the lock of a build whose process died, and clears its leftovers', async () => {
    const requirements = [{ name: 'tinyslug', version: '1.2.0' }];
    const { root: dir } = (await pythonEnvironment(requirements, options()))!;
    fs.rmSync(dir, { recursive: true });
    const deadPid = spawnSync('true').pid;
    fs.mkdirSync(`${dir}.lock`);
    fs.writeFileSync(`${dir}.lock/owner`, JSON.stringify({ pid: deadPid, host: os.hostname() }));

    const env = await pythonEnvironment(requirements, options());

    expect(env!.root).toBe(dir);
    expect(importedVersion(env!.python, 'tinyslug')).toBe('1.2.0');
    expect(leftovers()).toEqual([]);
  });

  it("reports a package pip cannot find with pip's error, and leaves nothing behind", async () => {
    const attempt = pythonEnvironment([{ name: 'tinyslug' }, { name: 'nonexistent-pkg' }], options());

    await expect(attempt).rejects.toThrow(ToolEnvironmentError);
    await expect(attempt).rejects.toThrow(/ERROR: No matching distribution found for nonexistent-pkg/);
    expect(fs.readdirSync(root)).toEqual([]);
    // A failure is not remembered: once the package exists, the same requirements install.
    writeWheel(wheels, { name: 'nonexistent-pkg', version: '0.0.1' });
    const env = await pythonEnvironment([{ name: 'tinyslug' }, { name: 'nonexistent-pkg' }], options());
    expect(importedVersion(env!.python, 'nonexistent_pkg')).toBe('0.0.1');
  });

  it('stops pip, and what it started, at the install timeout, and leaves nothing behind', async () => {
    const stuckPip = path.join(work, 'stuck-python');
    fs.writeFileSync(stuckPip, `#!/bin/sh\n/usr/bin/python3 -c 'import time; time.sleep(60)' '${work}'\n`, {
      mode: 0o755,
    });
    const started = Date.now();

    const attempt = pythonEnvironment(
      [{ name: 'tinyslug' }],
      options({ pipPython: stuckPip, installTimeoutMs: 500 }),
    );

    await expect(attempt).rejects.toThrow(
      new ToolEnvironmentError('installing tinyslug took longer than 0.5 seconds'),
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(fs.readdirSync(root)).toEqual([]);
    expect(
      await eventually(
        async () => processesMentioning(work),
        (pids) => pids.length === 0,
      ),
    ).toEqual([]);
  });

  it('refuses requirements that are not plain names and versions', async () => {
    for (const requirement of [
      { name: '--index-url=http://203.0.113.80/simple' },
      { name: 'https://203.0.113.80/evil.whl' },
      { name: '../wheels/tinyslug-1.2.0-py3-none-any.whl' },
      { name: 'tinyslug', version: '1.0 --pre' },
      { name: 'tinyslug', version: '>=1.0' },
      { name: '' },
    ]) {
      expect(() => requirementSpecs([requirement])).toThrow(ToolEnvironmentError);
      await expect(pythonEnvironment([requirement], options())).rejects.toThrow(/invalid pip requirement/);
    }
    expect(fs.existsSync(root)).toBe(false);
  });

  it('normalizes requirements as pip compares them: names, extras, duplicates, order', () => {
    expect(
      requirementSpecs([
        { name: 'Tiny_Slug', version: '1.0' },
        { name: 'tiny.slug', version: '1.0' },
        { name: 'requests[Socks, security]' },
        { name: 'numpy', version: '1.26.*' },
      ]),
    ).toEqual(['numpy==1.26.*', 'requests[security,socks]', 'tiny-slug==1.0']);
  });

  it('removes venvs unused for longer than the max age and keeps the others', async () => {
    const old = (await pythonEnvironment([{ name: 'tinyslug' }], options()))!;
    const recent = (await pythonEnvironment([{ name: 'tinydep-user' }], options()))!;
    const reused = (await pythonEnvironment([{ name: 'tinyslug', version: '1.2.0' }], options()))!;
    const longAgo = new Date(Date.now() - 2 * DAY);
    setLastUsed(old.root, longAgo);
    setLastUsed(recent.root, new Date(Date.now() - DAY / 2));
    // Used again just now: the use counts, not the build.
    setLastUsed(reused.root, longAgo);
    await pythonEnvironment([{ name: 'tinyslug', version: '1.2.0' }], options());

    const removed = await collectPythonEnvs(options());

    expect(removed).toEqual([old.root]);
    expect(fs.existsSync(old.root)).toBe(false);
    expect(importedVersion(recent.python, 'tinyslug')).toBe('1.2.0');
    expect(importedVersion(reused.python, 'tinyslug')).toBe('1.2.0');
    expect(leftovers()).toEqual([]);
    // Collected, then asked for again: built anew.
    const rebuilt = await pythonEnvironment([{ name: 'tinyslug' }], options());
    expect(rebuilt).toEqual(old);
    expect(importedVersion(rebuilt!.python, 'tinyslug')).toBe('1.2.0');
  });

  it('skips locked venvs and clears what dead builds left behind', async () => {
    const locked = (await pythonEnvironment([{ name: 'tinyslug' }], options()))!;
    setLastUsed(locked.root, new Date(Date.now() - 2 * DAY));
    fs.mkdirSync(`${locked.root}.lock`);
    fs.writeFileSync(`${locked.root}.lock/owner`, JSON.stringify({ pid: process.pid, host: os.hostname() }));
    const crashed = path.join(root, 'ab'.repeat(32));
    fs.mkdirSync(`${crashed}.tmp-${spawnSync('true').pid}-0badf00d/lib`, { recursive: true });
    fs.mkdirSync(`${crashed}.lock`);
    fs.writeFileSync(
      `${crashed}.lock/owner`,
      JSON.stringify({ pid: spawnSync('true').pid, host: os.hostname() }),
    );

    expect(await collectPythonEnvs(options())).toEqual([]);

    expect(fs.readdirSync(root).sort()).toEqual([
      path.basename(locked.root),
      `${path.basename(locked.root)}.lock`,
    ]);
    fs.rmSync(`${locked.root}.lock`, { recursive: true });
    expect(await collectPythonEnvs(options())).toEqual([locked.root]);
    expect(fs.readdirSync(root)).toEqual([]);
    expect(await collectPythonEnvs(options({ root: path.join(work, 'missing') }))).toEqual([]);
  });

  it('takes its options from the configuration', () => {
    expect(pythonEnvOptions(loadConfig({}))).toEqual({
      root: path.resolve('data', 'sandbox-envs'),
      python: '/usr/bin/python3',
      pipPython: undefined,
      indexUrl: undefined,
      noIndex: false,
      findLinks: [],
      installTimeoutMs: 300_000,
      maxAgeMs: 7 * DAY,
    });
    const config = loadConfig({
      DATA_DIR: '/srv/letta',
      SANDBOX_ENV_DIR: 'envs',
      SANDBOX_PIP_PYTHON: '/opt/python/bin/python3',
      PIP_INDEX_URL: 'file:///srv/simple',
      PIP_FIND_LINKS: '/srv/wheels, https://203.0.113.80/wheels/,',
      PIP_INSTALL_TIMEOUT_MS: '1000',
      SANDBOX_ENV_MAX_AGE_MS: '60000',
    });
    expect(pythonEnvOptions(config)).toMatchObject({
      root: path.resolve('envs'),
      pipPython: '/opt/python/bin/python3',
      indexUrl: 'file:///srv/simple',
      findLinks: ['/srv/wheels', 'https://203.0.113.80/wheels/'],
      installTimeoutMs: 1000,
      maxAgeMs: 60_000,
    });
    expect(pythonEnvOptions(loadConfig({ DATA_DIR: '/srv/letta' })).root).toBe('/srv/letta/sandbox-envs');
  });
});
