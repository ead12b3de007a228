/**
 * docs/configuration.md is generated from the configuration schema (scripts/config-doc.ts): it must be what
 * the generator renders now. And every relative link of README.md and docs/ must lead somewhere.
 */
import fs from 'node:fs';
import path from 'node:path';
import { configurationMarkdown, DOC_PATH } from '../scripts/config-doc';

const root = path.join(__dirname, '..');

describe('docs/configuration.md', () => {
  it("is what `npm run docs:config` renders from the areas' settings now", () => {
    const onDisk = fs.readFileSync(path.join(root, DOC_PATH), 'utf8');
    // On a difference: `npm run docs:config`, and commit the page with the schema.
    expect(onDisk).toBe(configurationMarkdown());
  });
});

/** GitHub's anchors of a markdown file's headings. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  // A heading's inline code counts: GitHub slugs its text.
  for (const line of withoutFences(text).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

/** The text without fenced code blocks. */
const withoutFences = (text: string) => text.replace(/^(```|~~~)[\s\S]*?^\1/gm, '');

/** The text without fenced code blocks and inline code, where brackets are not links. */
const withoutCode = (text: string) => withoutFences(text).replace(/`[^`\n]*`/g, '');

const markdownFiles = [
  'README.md',
  ...fs
    .readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

describe.each(markdownFiles)('%s', (file) => {
  it('links only to files and headings that exist', () => {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    const broken: string[] = [];
    for (const [, target] of withoutCode(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      const [filePart, anchor] = target.split('#');
      const resolved = filePart
        ? path.resolve(path.dirname(path.join(root, file)), filePart)
        : path.join(root, file);
      if (!fs.existsSync(resolved)) {
        broken.push(`${target}: no such file`);
        continue;
      }
      if (anchor && resolved.endsWith('.md') && !anchors(fs.readFileSync(resolved, 'utf8')).has(anchor))
        broken.push(`${target}: no such heading`);
    }
    expect(broken).toEqual([]);
  });
});
