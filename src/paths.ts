import fs from 'node:fs';
import path from 'node:path';

/** The folder holding package.json, whether this runs from src/ (tests) or dist/src/ (npm start). */
function findProjectRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export const projectRoot = findProjectRoot(__dirname);

export const version: string = JSON.parse(
  fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8'),
).version;

/** The project's own tools folder, where scripts/install-temporal.sh puts the Temporal CLI. */
export const toolsBinDir = path.join(projectRoot, '.tools', 'bin');
