/**
 * docs/configuration.md is generated from the configuration schema (scripts/config-doc.ts): it must be what
 * the generator renders now.
 */
import fs from 'node:fs';
import path from 'node:path';
import { configurationMarkdown, DOC_PATH } from '../scripts/config-doc';

const root = path.join(__dirname, '..');

describe('docs/configuration.md', () => {
  it('is what `npm run docs:config` renders from src/config.ts now', () => {
    const onDisk = fs.readFileSync(path.join(root, DOC_PATH), 'utf8');
    // On a difference: `npm run docs:config`, and commit the page with the schema.
    expect(onDisk).toBe(configurationMarkdown());
  });
});
