/**
 * docs/upgrades.md plans the removal of every `patched()` id in workflows/: its table and the code name
 * the same ids, so a new patch cannot land without its row and a removed one leaves none behind.
 */
import fs from 'node:fs';
import path from 'node:path';

const root = path.join(__dirname, '..');

/**
 * The ids workflow code passes to patched(): literals, constants of the same file, and TOOL_MODES rows'
 * `patch:`; an argument that is none of these is returned as unresolved, so no patch escapes the check.
 */
function patchIdsInCode(): { ids: Set<string>; unresolved: string[] } {
  const ids = new Set<string>();
  const unresolved: string[] = [];
  const folder = path.join(root, 'workflows');
  for (const file of fs.readdirSync(folder).filter((name) => name.endsWith('.ts'))) {
    const text = fs.readFileSync(path.join(folder, file), 'utf8');
    const constants = new Map(
      [...text.matchAll(/const ([A-Z_]+) = '([a-z0-9-]+)'/g)].map((match) => [match[1], match[2]]),
    );
    for (const [, argument] of text.matchAll(/patched\(([^)]+)\)/g)) {
      const id = /^'([a-z0-9-]+)'$/.exec(argument)?.[1] ?? constants.get(argument);
      if (id) ids.add(id);
      else if (!argument.endsWith('.patch')) unresolved.push(`${file}: patched(${argument})`);
    }
    for (const [, id] of text.matchAll(/\bpatch: '([a-z0-9-]+)'/g)) ids.add(id);
  }
  return { ids, unresolved };
}

/** The first column of the table under "The patches in the code". */
function patchIdsInPlan(): Set<string> {
  const text = fs.readFileSync(path.join(root, 'docs/upgrades.md'), 'utf8');
  const section = text.slice(text.indexOf('**The patches in the code'));
  return new Set([...section.matchAll(/^\| `([a-z0-9-]+)` +\|/gm)].map((match) => match[1]));
}

describe('the plan for removing patches', () => {
  it('names every patch the workflows use, and no other', () => {
    const { ids, unresolved } = patchIdsInCode();
    // An id that is neither a literal nor a constant of its file escapes this check: write it so.
    expect(unresolved).toEqual([]);
    expect(ids.size).toBeGreaterThanOrEqual(9);
    expect([...patchIdsInPlan()].sort()).toEqual([...ids].sort());
  });
});
