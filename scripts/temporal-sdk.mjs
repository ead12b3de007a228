#!/usr/bin/env node
// Moves every @temporalio/* package of package.json to one version, then installs them:
// `npm run temporal:sdk -- 1.25.0`. They are pinned together (test/stock-sdk.test.ts checks it), since the
// SDK's packages are released as a set and mixed versions fail at run time. Without a version it prints
// the pinned one.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const file = path.join(root, 'package.json');
const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
const sections = ['dependencies', 'devDependencies'].filter((section) => pkg[section]);
const names = sections.flatMap((section) =>
  Object.keys(pkg[section])
    .filter((name) => name.startsWith('@temporalio/'))
    .map((name) => [section, name]),
);

const version = process.argv[2];
if (!version) {
  process.stdout.write(`${[...new Set(names.map(([section, name]) => pkg[section][name]))].join(' ')}\n`);
  process.exit(0);
}
if (!/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(version)) {
  process.stderr.write(`temporal:sdk: expected an exact version such as 1.25.0, got '${version}'\n`);
  process.exit(2);
}
for (const [section, name] of names) pkg[section][name] = version;
fs.writeFileSync(file, `${JSON.stringify(pkg, null, 2)}\n`);
process.stderr.write(`temporal:sdk: ${names.length} packages at ${version}; npm install\n`);
execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
