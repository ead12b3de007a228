/**
 * The Temporal SDK as published (docs/design.md, "The SDK as published"): its packages pinned together at one
 * version, nothing patching them, and no worker option that turns its safeguards off.
 */
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/paths';

/** The SDK's debug mode option, spelled in two parts so that this file does not name it either. */
const DEBUG_MODE = 'debug' + 'Mode';
const read = (file: string) => fs.readFileSync(path.join(projectRoot, file), 'utf8');
const packageJson = JSON.parse(read('package.json'));
const temporalPackages = Object.entries<string>({
  ...packageJson.dependencies,
  ...packageJson.devDependencies,
}).filter(([name]) => name.startsWith('@temporalio/'));

/** The project's own source files, outside node_modules and build output. */
function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(projectRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(file);
    return /\.(ts|js|mjs|sh|md)$/.test(entry.name) ? [file] : [];
  });
}

describe('the Temporal SDK as published', () => {
  it('pins every @temporalio package to one exact version, the one installed', () => {
    expect(temporalPackages.length).toBeGreaterThanOrEqual(5);
    const versions = new Set(temporalPackages.map(([, version]) => version));
    expect(versions.size).toBe(1);
    const [version] = versions;
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    const lock = JSON.parse(read('package-lock.json'));
    for (const [name] of temporalPackages)
      expect(lock.packages[`node_modules/${name}`]?.version).toBe(version);
  });

  it('patches none of them', () => {
    const patches = path.join(projectRoot, 'patches');
    const patchFiles = fs.existsSync(patches) ? fs.readdirSync(patches) : [];
    expect(patchFiles.filter((file) => file.includes('temporalio'))).toEqual([]);
    expect(JSON.stringify(packageJson.scripts)).not.toMatch(/patch-package/);
    expect(read('Dockerfile')).not.toMatch(/patches/);
  });

  it('turns none of its safeguards off in the server’s code', () => {
    const files = ['src', 'activities', 'workflows', 'scripts', 'bench'].flatMap(sourceFiles);
    expect(files.length).toBeGreaterThan(50);
    const safeguardsOff = new RegExp(
      [DEBUG_MODE, 'isolateExecutionTimeout', 'TEMPORAL_WORKFLOW_PROMISE_HOOK'].join('|'),
    );
    const offending = files.filter((file) => safeguardsOff.test(read(file)));
    expect(offending.filter((file) => !file.endsWith('.md'))).toEqual([]);
  });

  it('names the SDK’s debug mode option nowhere: not in code, tests or docs', () => {
    const option = new RegExp(DEBUG_MODE);
    const files = [
      ...['src', 'activities', 'workflows', 'scripts', 'bench', 'test', 'docs'].flatMap((dir) =>
        fs.existsSync(path.join(projectRoot, dir)) ? sourceFiles(dir) : [],
      ),
      ...fs.readdirSync(projectRoot).filter((file) => /\.(md|json|ya?ml)$|^Dockerfile$/.test(file)),
    ];
    expect(files.length).toBeGreaterThan(100);
    expect(files.filter((file) => option.test(read(file)))).toEqual([]);
  });
});
