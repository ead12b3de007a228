import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nodeModulesFor, type NodeEnvOptions } from '../src/sandbox/node-env';
import { ToolEnvironmentError } from '../src/sandbox/tool-environment-error';
import { packGreetPackage } from './helpers/npm-package';

/** npm requirements: one node_modules per set, installed once, all or nothing. */
describe('node_modules for npm requirements', () => {
  let dir: string;
  let tarball: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-env-'));
    tarball = packGreetPackage(dir);
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** An npm that logs its calls to `log` before doing `then` (the real npm by default). */
  const fakeNpm = (name: string, then = 'exec npm "$@"') => {
    const script = path.join(dir, name);
    fs.writeFileSync(script, `#!/bin/sh\necho "$@" >> ${script}.log\n${then}\n`, { mode: 0o755 });
    return script;
  };
  const options = (name: string, npm: string, installTimeoutMs = 60_000): NodeEnvOptions => ({
    envDir: path.join(dir, name),
    npm,
    installTimeoutMs,
  });

  it('installs a set once, however many ask for it at the same time', async () => {
    const npm = fakeNpm('npm-once');
    const requirement = { name: 'tiny-greet', version: `file:${tarball}` };
    const folders = await Promise.all([
      nodeModulesFor([requirement], options('once', npm)),
      nodeModulesFor([requirement], options('once', npm)),
    ]);
    expect(folders[0]).toBe(folders[1]);
    expect(fs.readFileSync(path.join(folders[0], 'tiny-greet', 'index.js'), 'utf8')).toContain('greet');
    expect(await nodeModulesFor([requirement], options('once', npm))).toBe(folders[0]);
    expect(fs.readFileSync(`${npm}.log`, 'utf8').trim().split('\n')).toHaveLength(1);
    expect(fs.readdirSync(path.join(dir, 'once'))).toEqual([path.basename(path.dirname(folders[0]))]);
  });

  it("fails with npm's error line and leaves nothing behind", async () => {
    const missing = { name: 'tiny-missing', version: `file:${dir}/missing.tgz` };
    const failed = nodeModulesFor([missing], options('failed', 'npm'));
    await expect(failed).rejects.toThrow(ToolEnvironmentError);
    await expect(failed).rejects.toThrow(/^npm install tiny-missing@file:.* failed: .*ENOENT/);
    expect(fs.readdirSync(path.join(dir, 'failed'))).toEqual([]);
  });

  it('stops an install that takes too long, and leaves nothing behind', async () => {
    const npm = fakeNpm('npm-slow', 'sleep 30');
    const started = Date.now();
    await expect(nodeModulesFor([{ name: 'anything' }], options('slow', npm, 500))).rejects.toThrow(
      'npm install anything failed: timed out after 500 ms',
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(fs.readdirSync(path.join(dir, 'slow'))).toEqual([]);
  });
});
