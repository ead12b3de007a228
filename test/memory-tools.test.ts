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

const blocks = [
  { label: 'human', value: 'Name: Alice\nLikes: tea\nLikes: tea', read_only: false },
  { label: 'persona', value: 'Helpful.', read_only: true },
];

describe("memory tools, with Letta's checks and texts", () => {
  it('memory_replace replaces a unique string', () => {
    const edit = memoryReplace(blocks, { label: 'human', old_str: 'Alice', new_str: 'Bob' });
    expect(edit.value).toBe('Name: Bob\nLikes: tea\nLikes: tea');
    expect(edit.result).toMatch(/^The core memory block with label `human` has been successfully edited\./);
  });

  it('memory_replace refuses missing, repeated, line-numbered and read-only edits', () => {
    expect(() => memoryReplace(blocks, { label: 'human', old_str: 'Carol', new_str: 'x' })).toThrow(
      'No replacement was performed, old_str `Carol` did not appear verbatim in memory block with label `human`.',
    );
    expect(() => memoryReplace(blocks, { label: 'human', old_str: 'Likes: tea', new_str: 'x' })).toThrow(
      'No replacement was performed. Multiple occurrences of old_str `Likes: tea` in lines [2, 3]. Please ensure it is unique.',
    );
    expect(() => memoryReplace(blocks, { label: 'human', old_str: '1→ Name', new_str: 'x' })).toThrow(
      /^old_str contains a line number prefix/,
    );
    expect(() =>
      memoryReplace(blocks, {
        label: 'human',
        old_str: `${CORE_MEMORY_LINE_NUMBER_WARNING}\nName`,
        new_str: 'x',
      }),
    ).toThrow(/^old_str contains a line number warning/);
    expect(() => memoryReplace(blocks, { label: 'persona', old_str: 'Helpful', new_str: 'x' })).toThrow(
      READ_ONLY_BLOCK_EDIT_ERROR,
    );
    expect(() => memoryReplace(blocks, { label: 'nope', old_str: 'a', new_str: 'b' })).toThrow(
      "'Block field nope does not exist (available sections = human, persona)'",
    );
  });

  it('memory_insert inserts after a line, at the end by default, and checks the range', () => {
    expect(memoryInsert(blocks, { label: 'human', new_str: 'Age: 30', insert_line: 1 }).value).toBe(
      'Name: Alice\nAge: 30\nLikes: tea\nLikes: tea',
    );
    expect(memoryInsert(blocks, { label: 'human', new_str: 'End' }).value).toBe(
      'Name: Alice\nLikes: tea\nLikes: tea\nEnd',
    );
    expect(memoryInsert(blocks, { label: 'human', new_str: 'Top', insert_line: 0 }).value).toMatch(
      /^Top\nName/,
    );
    expect(() => memoryInsert(blocks, { label: 'human', new_str: 'x', insert_line: 9 })).toThrow(
      'Invalid `insert_line` parameter: 9. It should be within the range of lines of the memory block: [0, 3], or -1 to append to the end of the memory block.',
    );
  });

  it('memory_rethink rewrites a block, creating it when missing', () => {
    expect(memoryRethink(blocks, { label: 'human', new_memory: 'All new' })).toMatchObject({
      value: 'All new',
      create: false,
    });
    expect(memoryRethink(blocks, { label: 'notes', new_memory: 'Fresh' })).toMatchObject({
      value: 'Fresh',
      create: true,
    });
    expect(() => memoryRethink(blocks, { label: 'persona', new_memory: 'x' })).toThrow(
      READ_ONLY_BLOCK_EDIT_ERROR,
    );
  });

  it('core_memory_append and core_memory_replace return nothing', () => {
    expect(coreMemoryAppend(blocks, { label: 'human', content: 'More' })).toMatchObject({
      value: 'Name: Alice\nLikes: tea\nLikes: tea\nMore',
      result: null,
    });
    expect(
      coreMemoryReplace(blocks, { label: 'human', old_content: 'tea', new_content: 'coffee' }).value,
    ).toBe('Name: Alice\nLikes: coffee\nLikes: coffee');
    expect(() => coreMemoryReplace(blocks, { label: 'human', old_content: 'x', new_content: 'y' })).toThrow(
      "Old content 'x' not found in memory block 'human'",
    );
  });

  it('expands tabs as Python does', () => {
    expect(expandTabs('a\tb\n\tc')).toBe('a       b\n        c');
  });
});
