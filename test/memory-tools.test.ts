import {
  CORE_MEMORY_LINE_NUMBER_WARNING,
  coreMemoryAppend,
  coreMemoryReplace,
  expandTabs,
  memoryInsert,
  memoryReplace,
  memoryRethink,
  READ_ONLY_BLOCK_EDIT_ERROR,
} from '../src/tools/builtin/memory-edits';
import { planBlockEdit } from '../src/tools/builtin';
import type { MemoryBlock } from '../src/db/rows';

const blocks = [
  { label: 'human', value: 'Name: Alice\nLikes: tea\nLikes: tea', read_only: false },
  { label: 'persona', value: 'Helpful.', read_only: true },
];

describe("memory tools, with Letta's checks and texts", () => {
  it('memory_replace replaces a unique string', () => {
    const edit = memoryReplace(blocks, { label: 'human', old_string: 'Alice', new_string: 'Bob' });
    expect(edit.value).toBe('Name: Bob\nLikes: tea\nLikes: tea');
    expect(edit.result).toBe(edit.value); // Letta 0.16.8 returns the block's new value
  });

  it('memory_replace refuses missing, repeated, line-numbered and read-only edits', () => {
    expect(() => memoryReplace(blocks, { label: 'human', old_string: 'Carol', new_string: 'x' })).toThrow(
      'No replacement was performed, old_string `Carol` did not appear verbatim in memory block with label `human`.',
    );
    expect(() =>
      memoryReplace(blocks, { label: 'human', old_string: 'Likes: tea', new_string: 'x' }),
    ).toThrow(
      'No replacement was performed. Multiple occurrences of old_string `Likes: tea` in lines [2, 3]. Please ensure it is unique.',
    );
    expect(() => memoryReplace(blocks, { label: 'human', old_string: '1→ Name', new_string: 'x' })).toThrow(
      /^old_string contains a line number prefix/,
    );
    expect(() =>
      memoryReplace(blocks, {
        label: 'human',
        old_string: `${CORE_MEMORY_LINE_NUMBER_WARNING}\nName`,
        new_string: 'x',
      }),
    ).toThrow(/^old_string contains a line number warning/);
    expect(() => memoryReplace(blocks, { label: 'persona', old_string: 'Helpful', new_string: 'x' })).toThrow(
      READ_ONLY_BLOCK_EDIT_ERROR,
    );
    expect(() => memoryReplace(blocks, { label: 'nope', old_string: 'a', new_string: 'b' })).toThrow(
      "'Block field nope does not exist (available sections = human, persona)'",
    );
  });

  it('memory_insert inserts after a line, at the end by default, and checks the range', () => {
    expect(memoryInsert(blocks, { label: 'human', new_string: 'Age: 30', insert_line: 1 }).value).toBe(
      'Name: Alice\nAge: 30\nLikes: tea\nLikes: tea',
    );
    expect(memoryInsert(blocks, { label: 'human', new_string: 'End' })).toMatchObject({
      value: 'Name: Alice\nLikes: tea\nLikes: tea\nEnd',
      result: 'Name: Alice\nLikes: tea\nLikes: tea\nEnd',
    });
    expect(memoryInsert(blocks, { label: 'human', new_string: 'Top', insert_line: 0 }).value).toMatch(
      /^Top\nName/,
    );
    expect(() => memoryInsert(blocks, { label: 'human', new_string: 'x', insert_line: 9 })).toThrow(
      'Invalid `insert_line` parameter: 9. It should be within the range of lines of the memory block: [0, 3], or -1 to append to the end of the memory block.',
    );
  });

  it('memory_rethink rewrites a block, creating it when missing', () => {
    expect(memoryRethink(blocks, { label: 'human', new_memory: 'All new' })).toMatchObject({
      value: 'All new',
      create: false,
      result: 'All new',
    });
    expect(memoryRethink(blocks, { label: 'notes', new_memory: 'Fresh' })).toMatchObject({
      value: 'Fresh',
      create: true,
    });
    expect(() => memoryRethink(blocks, { label: 'persona', new_memory: 'x' })).toThrow(
      READ_ONLY_BLOCK_EDIT_ERROR,
    );
  });

  it('core_memory_append and core_memory_replace return the new value', () => {
    expect(coreMemoryAppend(blocks, { label: 'human', content: 'More' })).toMatchObject({
      value: 'Name: Alice\nLikes: tea\nLikes: tea\nMore',
      result: 'Name: Alice\nLikes: tea\nLikes: tea\nMore',
    });
    expect(
      coreMemoryReplace(blocks, { label: 'human', old_content: 'tea', new_content: 'coffee' }),
    ).toMatchObject({
      value: 'Name: Alice\nLikes: coffee\nLikes: coffee',
      result: 'Name: Alice\nLikes: coffee\nLikes: coffee',
    });
    expect(() => coreMemoryReplace(blocks, { label: 'human', old_content: 'x', new_content: 'y' })).toThrow(
      "Old content 'x' not found in memory block 'human'",
    );
  });

  it('takes the old_str / new_str of older Letta versions when the arguments have no 0.16.8 names', () => {
    const stored = [{ ...blocks[0], id: 'block-1', char_limit: 1000 }] as MemoryBlock[];
    const replace = planBlockEdit(
      'memory_replace',
      { label: 'human', old_str: 'Alice', new_str: 'Bob' },
      stored,
    );
    expect(replace?.write?.value).toBe('Name: Bob\nLikes: tea\nLikes: tea');
    const insert = planBlockEdit(
      'memory_insert',
      { label: 'human', new_str: 'Age: 30', insert_line: 1 },
      stored,
    );
    expect(insert?.write?.value).toBe('Name: Alice\nAge: 30\nLikes: tea\nLikes: tea');
    // Both given: 0.16.8's names win.
    const both = { label: 'human', old_string: 'Name', old_str: 'Alice', new_string: 'Called', new_str: 'x' };
    expect(planBlockEdit('memory_replace', both, stored)?.write?.value).toMatch(/^Called: Alice\n/);
    expect(() => planBlockEdit('memory_replace', { label: 'human', old_string: 'Alice' }, stored)).toThrow(
      "missing or invalid argument 'new_string' (expected a string)",
    );
  });

  it("finds line-number prefixes as Letta's regex does in Python", () => {
    expect(() => memoryInsert(blocks, { label: 'human', new_string: 'a\n  12→ b' })).toThrow(
      /^new_string contains a line number prefix/,
    );
    expect(() => memoryInsert(blocks, { label: 'human', new_string: '١→ Arabic-Indic one' })).toThrow(
      /^new_string contains a line number prefix/,
    );
    // Python's `^` under re.MULTILINE follows a newline only, not a carriage return.
    expect(memoryInsert(blocks, { label: 'human', new_string: 'a\r1→ b' }).value).toMatch(/a\r1→ b$/);
  });

  it("replaces as Python's str.replace does: an empty old string in an empty block", () => {
    const empty = [{ label: 'notes', value: '', read_only: false }];
    expect(memoryReplace(empty, { label: 'notes', old_string: '', new_string: 'First' }).value).toBe('First');
    expect(memoryReplace(blocks, { label: 'human', old_string: 'Alice', new_string: '$& $1' }).value).toBe(
      'Name: $& $1\nLikes: tea\nLikes: tea',
    );
  });

  it('expands tabs as Python does', () => {
    expect(expandTabs('a\tb\n\tc')).toBe('a       b\n        c');
  });
});
