/**
 * Letta's block-level memory tools, `memory` and `memory_apply_patch` (letta/services/tool_executor/
 * core_tool_executor.py), as pure functions over the agent's blocks: each works on a copy of them,
 * block by block in Letta's order, and gives the blocks as they end and what the tool returns. Texts
 * and checks are Letta 0.16.8's; two checks are ours: a block is never given a label another of the
 * agent's blocks has (Letta would attach a second block of that label), and a read-only block is never
 * deleted or renamed by the agent (Letta checks read-only on edits of its value only).
 */
import { ToolError } from '../../returns/tool-error';
import {
  CORE_MEMORY_LINE_NUMBER_WARNING,
  expandTabs,
  memoryInsert,
  memoryReplace,
  READ_ONLY_BLOCK_EDIT_ERROR,
  type EditableBlock,
} from './memory-edits';

/** A block as a block tool leaves it: `id` undefined for one it creates. */
export interface PlannedBlock extends EditableBlock {
  id?: string;
  description: string | null;
}

export interface BlockToolOutcome {
  /** The agent's blocks after the tool, in the order read, a created one last. */
  blocks: PlannedBlock[];
  result: string;
}

type Args = Record<string, unknown>;

const LINE_NUMBER_PREFIX = /(?:^|\n)[ \t]*\p{Nd}+→/u;
const RECOMPILED = 'Your system prompt has been recompiled with';

/** A path's label as Letta's memory commands read it; most also turn `/` into `_`. */
const labelOf = (path: string, slashes: 'keep' | 'underscore' = 'underscore') => {
  const label = removePrefix(removePrefix(path, '/memories/'), '/');
  return slashes === 'keep' ? label : label.replaceAll('/', '_');
};

const removePrefix = (text: string, prefix: string) =>
  text.startsWith(prefix) ? text.slice(prefix.length) : text;

/** Python's str.splitlines() (but for the separators \x1c-\x1e): no empty last line after a final break. */
function splitLines(text: string): string[] {
  const lines = text.split(/\r\n|[\n\r\v\f\x85\u2028\u2029]/);
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** Python's `'Block field … does not exist …'` KeyError, as str() shows it. */
const missingBlock = (blocks: PlannedBlock[], label: string) =>
  `'Block field ${label} does not exist (available sections = ${blocks.map((b) => b.label).join(', ')})'`;

/** The agent's blocks being changed by one tool call. */
class WorkingBlocks {
  readonly blocks: PlannedBlock[];
  constructor(blocks: readonly PlannedBlock[]) {
    this.blocks = blocks.map((b) => ({ ...b }));
  }
  find(label: string): PlannedBlock | undefined {
    return this.blocks.find((b) => b.label === label);
  }
  /** Letta's `memory.get_block`, whose KeyError the caller words. */
  get(label: string, missing = (text: string) => new ToolError(text)): PlannedBlock {
    const block = this.find(label);
    if (!block) throw missing(missingBlock(this.blocks, label));
    return block;
  }
  setValue(label: string, value: string) {
    this.get(label).value = value;
  }
  create(label: string, value: string, description: string) {
    if (this.find(label)) throw new ToolError(`Error: Memory block '${label}' already exists`);
    this.blocks.push({ label, value, description, read_only: false });
  }
  remove(label: string) {
    const block = this.get(label);
    if (block.read_only) throw new ToolError(READ_ONLY_BLOCK_EDIT_ERROR);
    this.blocks.splice(this.blocks.indexOf(block), 1);
  }
  rename(label: string, newLabel: string) {
    const block = this.get(label);
    if (block.read_only) throw new ToolError(READ_ONLY_BLOCK_EDIT_ERROR);
    if (newLabel !== label && this.find(newLabel))
      throw new ToolError(`Error: Memory block '${newLabel}' already exists`);
    block.label = newLabel;
  }
}

function required(args: Args, name: string, command: string): string {
  const value = args[name];
  if (value === undefined || value === null)
    throw new ToolError(`Error: ${name} is required for ${command} command`);
  if (typeof value !== 'string') throw new ToolError(`invalid argument '${name}' (expected a string)`);
  return value;
}

const optionalString = (args: Args, name: string) =>
  typeof args[name] === 'string' && args[name] !== '' ? (args[name] as string) : undefined;

function insertLineOf(args: Args): number {
  const value = args.insert_line;
  if (value === undefined || value === null) return -1;
  const n = typeof value === 'string' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n))
    throw new ToolError("invalid argument 'insert_line' (expected an integer)");
  return n;
}

function memoryCreate(work: WorkingBlocks, path: string, description: string, fileText?: string): string {
  const label = labelOf(path, 'keep');
  work.create(label, fileText ?? '', description);
  return `Successfully created memory block '${label}'. ${RECOMPILED} the new memory block and is now active in your context.`;
}

/** Letta answers a delete it could not do with a success that says so. */
function memoryDelete(work: WorkingBlocks, path: string): string {
  const label = labelOf(path);
  try {
    work.remove(label);
  } catch (error) {
    if (error instanceof ToolError && error.message === READ_ONLY_BLOCK_EDIT_ERROR) throw error;
    return `Error performing delete: ${(error as Error).message}`;
  }
  return `Successfully deleted memory block '${label}'. Your system prompt has been recompiled without this memory block and is now active in your context.`;
}

function memoryRename(work: WorkingBlocks, oldPath: string, newPath: string): string {
  const oldLabel = labelOf(oldPath);
  const newLabel = labelOf(newPath);
  work.get(oldLabel, (text) => new ToolError(`Error performing rename: ${text}`));
  work.rename(oldLabel, newLabel);
  return `Successfully renamed memory block '${oldLabel}' to '${newLabel}'. ${RECOMPILED} the renamed memory block and is now active in your context.`;
}

function memoryDescribe(work: WorkingBlocks, path: string, description: string): string {
  const label = labelOf(path);
  work.get(label, (text) => new ToolError(`Error performing update_description: ${text}`)).description =
    description;
  return `Successfully updated description of memory block '${label}'. ${RECOMPILED} the updated description and is now active in your context.`;
}

/** Letta's `memory` tool: create, str_replace, insert, delete and rename (or describe) a block. */
export function memoryCommand(blocks: readonly PlannedBlock[], args: Args): BlockToolOutcome {
  const work = new WorkingBlocks(blocks);
  const command = args.command;
  const result = (() => {
    switch (command) {
      case 'create':
        return memoryCreate(
          work,
          required(args, 'path', 'create'),
          required(args, 'description', 'create'),
          optionalString(args, 'file_text'),
        );
      case 'str_replace': {
        const label = labelOf(required(args, 'path', 'str_replace'), 'keep');
        const edit = memoryReplace(work.blocks, {
          label,
          old_string: required(args, 'old_string', 'str_replace'),
          new_string: required(args, 'new_string', 'str_replace'),
        });
        work.setValue(label, edit.value);
        return edit.result;
      }
      case 'insert': {
        const label = labelOf(required(args, 'path', 'insert'));
        const edit = memoryInsert(
          work.blocks,
          { label, new_string: required(args, 'insert_text', 'insert'), insert_line: insertLineOf(args) },
          'insert_text',
        );
        work.setValue(label, edit.value);
        return edit.result;
      }
      case 'delete':
        return memoryDelete(work, required(args, 'path', 'delete'));
      case 'rename': {
        const path = optionalString(args, 'path');
        const description = optionalString(args, 'description');
        if (path && description) return memoryDescribe(work, path, description);
        const oldPath = optionalString(args, 'old_path');
        const newPath = optionalString(args, 'new_path');
        if (oldPath && newPath) return memoryRename(work, oldPath, newPath);
        throw new ToolError(
          'Error: path and description are required for update_description command, or old_path and new_path are required for rename command',
        );
      }
      default:
        throw new ToolError(
          `Error: Unknown command '${String(command)}'. Supported commands: create, str_replace, insert, delete, rename`,
        );
    }
  })();
  return { blocks: work.blocks, result };
}

/** A hunk's lines: what it expects in the block, and what replaces it. */
function hunksOf(patchText: string): string[][] {
  const lines = splitLines(patchText).filter(
    (ln) => !ln.startsWith('*** ') && !ln.startsWith('---') && !ln.startsWith('+++'),
  );
  const hunks: string[][] = [];
  let hunk: string[] = [];
  for (const ln of lines) {
    if (ln.startsWith('@@')) {
      if (hunk.length > 0) hunks.push(hunk);
      hunk = [];
    } else if (ln.startsWith(' ') || ln.startsWith('-') || ln.startsWith('+')) hunk.push(ln);
    else if (ln.trim() === '') hunk.push(' '); // a blank line is context for an empty line
  }
  if (hunk.length > 0) hunks.push(hunk);
  if (hunks.length === 0)
    throw new ToolError("No applicable hunks found in patch. Ensure lines start with ' ', '-', or '+'.");
  return hunks;
}

function matchesAt(lines: string[], needle: string[]): number[] {
  const at: number[] = [];
  for (let i = 0; i + needle.length <= lines.length; i++)
    if (needle.every((line, j) => lines[i + j] === line)) at.push(i);
  return at;
}

/** Letta's simplified unified diff, hunk after hunk, each matched exactly once. */
function applyUnifiedPatch(value: string, patchText: string): string {
  let lines = expandTabs(value).split('\n');
  for (const hunk of hunksOf(expandTabs(patchText))) {
    const expected = hunk.filter((ln) => !ln.startsWith('+')).map((ln) => ln.slice(1));
    const replacement = hunk.filter((ln) => !ln.startsWith('-')).map((ln) => ln.slice(1));
    if (expected.length === 0) {
      lines = [...lines, ...replacement]; // a pure insertion goes at the end
      continue;
    }
    const at = matchesAt(lines, expected);
    if (at.length === 0) {
      throw new ToolError(
        'Failed to apply patch: expected hunk context not found in the memory block. ' +
          `Verify the target lines exist and try providing more context. Expected start:\n${expected.slice(0, 4).join('\n')}`,
      );
    }
    if (at.length > 1) {
      throw new ToolError(
        'Failed to apply patch: hunk context matched multiple places in the memory block. ' +
          'Please add more unique surrounding context to disambiguate.',
      );
    }
    lines = [...lines.slice(0, at[0]), ...replacement, ...lines.slice(at[0] + expected.length)];
  }
  return lines.join('\n');
}

type PatchAction =
  | { kind: 'add'; label: string; description: string; content: string[] }
  | { kind: 'delete'; label: string }
  | { kind: 'update'; label: string; patch: string[] }
  | { kind: 'rename'; oldLabel: string; newLabel: string };

const HEADERS = ['*** Add Block:', '*** Delete Block:', '*** Update Block:', '*** Move to:'];

function headerLabel(line: string, what: string): string {
  const label = line.slice(line.indexOf(':') + 1).trim();
  if (!label)
    throw new ToolError(
      `${what} must specify a non-empty ${what === '*** Move to:' ? 'new label' : 'label'}`,
    );
  return label;
}

/** The operations of a multi-block patch, in order. */
function patchActions(patch: string): PatchAction[] {
  const lines = splitLines(patch);
  const actions: PatchAction[] = [];
  let current: PatchAction | undefined;
  let lastLabel: string | undefined;
  const flush = () => {
    if (current) actions.push(current);
    current = undefined;
  };
  for (let i = 0; i < lines.length; i++) {
    const ln = lines[i];
    if (ln.startsWith('*** Add Block:')) {
      flush();
      current = { kind: 'add', label: headerLabel(ln, '*** Add Block:'), description: '', content: [] };
      lastLabel = current.label;
      if (lines[i + 1]?.startsWith('Description:')) {
        current.description = lines[++i].slice('Description:'.length).trim();
      }
    } else if (ln.startsWith('*** Delete Block:')) {
      flush();
      lastLabel = headerLabel(ln, '*** Delete Block:');
      actions.push({ kind: 'delete', label: lastLabel });
    } else if (ln.startsWith('*** Update Block:')) {
      flush();
      current = { kind: 'update', label: headerLabel(ln, '*** Update Block:'), patch: [] };
      lastLabel = current.label;
    } else if (ln.startsWith('*** Move to:')) {
      const newLabel = headerLabel(ln, '*** Move to:');
      if (lastLabel === undefined)
        throw new ToolError('*** Move to: must follow an Add/Update/Delete header');
      // After the block's own operation: Letta appends the move before it, so that a block added or
      // updated in the same patch is looked for under its new label, and not found.
      flush();
      actions.push({ kind: 'rename', oldLabel: lastLabel, newLabel });
      lastLabel = newLabel;
    } else if (current?.kind === 'add') {
      if (ln.startsWith('+')) current.content.push(ln.slice(1));
      else if (ln.trim() === '') current.content.push('');
    } else if (current?.kind === 'update') current.patch.push(ln);
  }
  flush();
  if (actions.length === 0) {
    throw new ToolError(
      'No operations found. Provide at least one of: *** Add Block, *** Delete Block, *** Update Block.',
    );
  }
  return actions;
}

function writableBlock(work: WorkingBlocks, label: string): PlannedBlock {
  const block = work.get(label, () => new ToolError(`Error: Memory block '${label}' does not exist`));
  if (block.read_only) throw new ToolError(READ_ONLY_BLOCK_EDIT_ERROR);
  return block;
}

const asPath = (label: string) => `/memories/${label.trim()}`;

/** Letta's `memory_apply_patch`: a diff of one block, or codex-style operations on several. */
export function memoryApplyPatch(
  blocks: readonly PlannedBlock[],
  args: { label: string; patch: string },
): BlockToolOutcome {
  if (LINE_NUMBER_PREFIX.test(args.patch)) {
    throw new ToolError(
      'Patch contains a line number prefix, which is not allowed. Do not include line numbers (they are for display only).',
    );
  }
  if (args.patch.includes(CORE_MEMORY_LINE_NUMBER_WARNING))
    throw new ToolError(
      'Patch contains the line number warning banner, which is not allowed. Provide only the text to edit.',
    );
  const patch = expandTabs(args.patch);
  const work = new WorkingBlocks(blocks);
  if (!splitLines(patch).some((ln) => HEADERS.some((header) => ln.startsWith(header)))) {
    const block = writableBlock(work, args.label);
    block.value = applyUnifiedPatch(block.value, patch);
    return { blocks: work.blocks, result: block.value };
  }
  const done = patchActions(patch).map((action) => {
    switch (action.kind) {
      case 'add':
        if (work.find(action.label))
          throw new ToolError(`Error: Memory block '${action.label}' already exists`);
        memoryCreate(
          work,
          asPath(action.label),
          action.description,
          action.content.join('\n').replace(/\n+$/, ''),
        );
        return `Created memory block '${action.label}'`;
      case 'delete':
        memoryDelete(work, asPath(action.label));
        return `Deleted memory block '${action.label}'`;
      case 'rename':
        memoryRename(work, asPath(action.oldLabel), asPath(action.newLabel));
        return `Renamed memory block '${action.oldLabel}' to '${action.newLabel}'`;
      case 'update': {
        const block = writableBlock(work, action.label);
        block.value = applyUnifiedPatch(block.value, action.patch.join('\n'));
        return `Updated memory block '${action.label}'`;
      }
    }
  });
  return {
    blocks: work.blocks,
    result:
      'Successfully applied memory patch operations. ' +
      'Your system prompt has been recompiled with the updated memory contents and is now active in your context.\n\n' +
      `Operations completed:\n- ${done.join('\n- ')}`,
  };
}
