import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** A one-file npm package (`greet(name)`) packed into a tarball in `dir`: installs need no registry. */
export function packGreetPackage(dir: string): string {
  const source = path.join(dir, 'tiny-greet');
  fs.mkdirSync(source, { recursive: true });
  fs.writeFileSync(
    path.join(source, 'package.json'),
    JSON.stringify({ name: 'tiny-greet', version: '1.0.0', main: 'index.js' }),
  );
  fs.writeFileSync(path.join(source, 'index.js'), "exports.greet = (name) => 'hi ' + name;\n");
  execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: source, stdio: 'pipe' });
  return path.join(dir, 'tiny-greet-1.0.0.tgz');
}
