import { memoryApplyPatch, memoryCommand, type PlannedBlock } from '../src/tools/builtin/memory-blocks';
import { READ_ONLY_BLOCK_EDIT_ERROR } from '../src/tools/builtin/memory-edits';

const blocks: PlannedBlock[] = [
  { id: 'block-1', label: 'human', value: 'Name: Alice\nLikes: tea', read_only: false, description: null },
  { id: 'block-2', label: 'persona', value: 'Helpful.', read_only: true, description: 'Who I am.' },
];
const RECOMPILED = 'Your system prompt has been recompiled with';

describe("Letta's `memory` tool, command by command", () => {
  it('creates a block with its description and text, and refuses a label the agent has', () => {
    const { blocks: after, result } = memoryCommand(blocks, {
      command: 'create',
      path: '/memories/coding',
      description: "The user's coding preferences.",
      file_text: 'Type hints everywhere.',
    });
    expect(result).toBe(
      `Successfully created memory block 'coding'. ${RECOMPILED} the new memory block and is now active in your context.`,
    );
    expect(after[2]).toEqual({
      label: 'coding',
      value: 'Type hints everywhere.',
      description: "The user's coding preferences.",
      read_only: false,
    });
    expect(blocks).toHaveLength(2); // the blocks read are not changed
    expect(() => memoryCommand(blocks, { command: 'create', path: 'human', description: 'x' })).toThrow(
      "Error: Memory block 'human' already exists",
    );
    expect(() => memoryCommand(blocks, { command: 'create', path: '/memories/x' })).toThrow(
      'Error: description is required for create command',
    );
  });

  it('replaces and inserts by path, with the checks of memory_replace and memory_insert', () => {
    const replaced = memoryCommand(blocks, {
      command: 'str_replace',
      path: '/memories/human',
      old_string: 'Alice',
      new_string: 'Bob',
    });
    expect(replaced.result).toBe('Name: Bob\nLikes: tea');
    expect(replaced.blocks[0].value).toBe('Name: Bob\nLikes: tea');
    const inserted = memoryCommand(blocks, {
      command: 'insert',
      path: '/memories/human',
      insert_line: 1,
      insert_text: 'Age: 30',
    });
    expect(inserted.blocks[0].value).toBe('Name: Alice\nAge: 30\nLikes: tea');
    expect(
      memoryCommand(blocks, { command: 'insert', path: 'human', insert_text: 'End' }).blocks[0].value,
    ).toBe('Name: Alice\nLikes: tea\nEnd');
    expect(() => memoryCommand(blocks, { command: 'insert', path: 'human', insert_text: '1→ x' })).toThrow(
      /^insert_text contains a line number prefix/,
    );
    expect(() =>
      memoryCommand(blocks, { command: 'str_replace', path: 'persona', old_string: 'H', new_string: 'x' }),
    ).toThrow(READ_ONLY_BLOCK_EDIT_ERROR);
  });

  it('deletes, renames and describes blocks; a read-only block is neither deleted nor renamed', () => {
    const deleted = memoryCommand(blocks, { command: 'delete', path: '/memories/human' });
    expect(deleted.blocks.map((b) => b.label)).toEqual(['persona']);
    expect(deleted.result).toMatch(/^Successfully deleted memory block 'human'\./);
    // Letta answers a delete of a missing block with a success that says it failed.
    expect(memoryCommand(blocks, { command: 'delete', path: 'nope' }).result).toBe(
      "Error performing delete: 'Block field nope does not exist (available sections = human, persona)'",
    );
    const renamed = memoryCommand(blocks, {
      command: 'rename',
      old_path: '/memories/human',
      new_path: '/memories/user',
    });
    expect(renamed.blocks[0]).toMatchObject({
      id: 'block-1',
      label: 'user',
      value: 'Name: Alice\nLikes: tea',
    });
    const described = memoryCommand(blocks, { command: 'rename', path: 'human', description: 'The user.' });
    expect(described.blocks[0].description).toBe('The user.');
    expect(described.result).toMatch(/^Successfully updated description of memory block 'human'\./);
    expect(() => memoryCommand(blocks, { command: 'delete', path: 'persona' })).toThrow(
      READ_ONLY_BLOCK_EDIT_ERROR,
    );
    expect(() =>
      memoryCommand(blocks, { command: 'rename', old_path: 'human', new_path: 'persona' }),
    ).toThrow("Error: Memory block 'persona' already exists");
    expect(() => memoryCommand(blocks, { command: 'view' })).toThrow(
      "Error: Unknown command 'view'. Supported commands: create, str_replace, insert, delete, rename",
    );
  });
});

describe("Letta's `memory_apply_patch`", () => {
  it('applies a unified diff to the labelled block, each hunk matched once', () => {
    const { result, blocks: after } = memoryApplyPatch(blocks, {
      label: 'human',
      patch: '@@\n Name: Alice\n-Likes: tea\n+Likes: coffee\n+Age: 30',
    });
    expect(result).toBe('Name: Alice\nLikes: coffee\nAge: 30');
    expect(after[0].value).toBe(result);
    expect(memoryApplyPatch(blocks, { label: 'human', patch: '+Pets: none' }).result).toBe(
      'Name: Alice\nLikes: tea\nPets: none',
    );
    expect(() => memoryApplyPatch(blocks, { label: 'human', patch: '-Likes: milk' })).toThrow(
      /^Failed to apply patch: expected hunk context not found in the memory block/,
    );
    expect(() => memoryApplyPatch(blocks, { label: 'nope', patch: '+x' })).toThrow(
      "Error: Memory block 'nope' does not exist",
    );
    expect(() => memoryApplyPatch(blocks, { label: 'persona', patch: '+x' })).toThrow(
      READ_ONLY_BLOCK_EDIT_ERROR,
    );
    expect(() => memoryApplyPatch(blocks, { label: 'human', patch: ' 1→ Name: Alice\n+x' })).toThrow(
      /^Patch contains a line number prefix/,
    );
  });

  it('adds, updates, deletes and moves blocks in one patch, in order', () => {
    const patch = [
      '*** Add Block: notes',
      'Description: Loose notes.',
      '+first',
      '+second',
      '*** Update Block: human',
      '-Likes: tea',
      '+Likes: coffee',
      '*** Move to: user',
    ].join('\n');
    const { result, blocks: after } = memoryApplyPatch(blocks, { label: '', patch });
    expect(after.map((b) => [b.label, b.value, b.description])).toEqual([
      ['user', 'Name: Alice\nLikes: coffee', null],
      ['persona', 'Helpful.', 'Who I am.'],
      ['notes', 'first\nsecond', 'Loose notes.'],
    ]);
    expect(result).toBe(
      'Successfully applied memory patch operations. Your system prompt has been recompiled with the updated memory contents and is now active in your context.\n\n' +
        "Operations completed:\n- Created memory block 'notes'\n- Updated memory block 'human'\n- Renamed memory block 'human' to 'user'",
    );
    expect(() => memoryApplyPatch(blocks, { label: '', patch: '*** Add Block: human\n+x' })).toThrow(
      "Error: Memory block 'human' already exists",
    );
    expect(() => memoryApplyPatch(blocks, { label: '', patch: '*** Move to: x' })).toThrow(
      '*** Move to: must follow an Add/Update/Delete header',
    );
  });
});
