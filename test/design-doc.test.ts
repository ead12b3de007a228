/**
 * The newcomer's path in docs/design.md ("One turn's path", "One tool call's path") names the code a
 * message passes through: every file it names exists, every function it names is defined where the
 * code is, and the loop it quotes from `agentTurn` is the loop in workflows/agent-turn.ts. A rename
 * that leaves the path behind fails here.
 */
import fs from 'node:fs';
import path from 'node:path';

const root = path.join(__dirname, '..');
const design = fs.readFileSync(path.join(root, 'docs/design.md'), 'utf8');

/** The text of a `## ` section of docs/design.md, up to the next one. */
function section(title: string): string {
  const start = design.indexOf(`## ${title}\n`);
  if (start < 0) throw new Error(`docs/design.md has no section "${title}"`);
  const end = design.indexOf('\n## ', start + 1);
  return design.slice(start, end < 0 ? undefined : end);
}

const paths = ["One turn's path", "One tool call's path"].map(section).join('\n');

/** Every TypeScript file of the server: where the named functions must be defined. */
function sources(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(relative);
    return entry.name.endsWith('.ts') ? [relative] : [];
  });
}
const code = ['src', 'workflows', 'activities', 'contracts']
  .flatMap(sources)
  .map((file) => fs.readFileSync(path.join(root, file), 'utf8'))
  .join('\n');

/** The inline code spans of the text, outside fenced blocks. */
const spans = (text: string) =>
  [...text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/`([^`\n]+)`/g)].map((match) => match[1]);

describe("docs/design.md's paths through the code", () => {
  it('name files that exist', () => {
    const files = spans(paths).filter((span) => /^[\w./-]+\.ts$/.test(span));
    expect(files.length).toBeGreaterThan(5);
    const missing = files.filter(
      (file) =>
        !fs.existsSync(path.join(root, file)) &&
        // A bare name in a list that began with its folder: `activities/builtin.ts`, `run-code.ts`.
        !['activities', 'workflows', 'src/api'].some((dir) => fs.existsSync(path.join(root, dir, file))),
    );
    expect(missing).toEqual([]);
  });

  it('name functions the code defines', () => {
    const names = spans(paths)
      .map((span) => /^(\w+)(?:\(.*\))?$/.exec(span)?.[1])
      .filter((name): name is string => Boolean(name) && /[a-z][A-Z]/.test(name!));
    expect(names).toEqual(
      expect.arrayContaining(['agentTurn', 'runStep', 'runToolCall', 'toolCallActivity']),
    );
    // The executor's one method, a plain word the filter above leaves out.
    expect(spans(paths)).toContain('execute(call)');
    expect(code).toMatch(/\bexecute\(call: ToolCall\)/);
    const defined = (name: string) =>
      new RegExp(
        `(function|const|let)\\s+${name}\\b|\\b${name}\\s*[(:]|\\basync\\s+${name}\\b|\\b${name}\\??\\(`,
      ).test(code);
    expect(names.filter((name) => !defined(name))).toEqual([]);
  });

  it("quotes agentTurn's loop as workflows/agent-turn.ts has it", () => {
    const quoted = /```ts\n([\s\S]*?)```/.exec(section("One turn's path"))?.[1];
    expect(quoted).toBeDefined();
    const statements = quoted!
      .split('\n')
      .map((line) => line.replace(/\/\/.*$/, '').trim())
      .filter(Boolean);
    const turn = fs.readFileSync(path.join(root, 'workflows/agent-turn.ts'), 'utf8');
    const loop = turn.slice(
      turn.indexOf('  for (;;) {'),
      turn.indexOf('\n  }\n', turn.indexOf('  for (;;) {')) + 4,
    );
    expect(
      loop
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean),
    ).toEqual(statements);
  });
});
