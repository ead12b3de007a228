/**
 * Letta's core-memory tools as pure functions over block values (letta/services/tool_executor/
 * core_tool_executor.py): argument names, checks, error texts and returns are Letta 0.16.8's, word for
 * word. A thrown ToolError is the tool's own error: the model sees its message.
 */

import { ToolError } from '../../returns/tool-error';

export const READ_ONLY_BLOCK_EDIT_ERROR = 'Error This block is read-only and cannot be edited.';
export const CORE_MEMORY_LINE_NUMBER_WARNING =
  "# NOTE: Line numbers shown below (with arrows like '1→') are to help during editing. Do NOT include line number prefixes in your memory edit tool calls.";
// Letta's MEMORY_TOOLS_LINE_NUMBER_PREFIX_REGEX as Python's re.search runs it: `^` after a newline
// only, and any Unicode digit.
const LINE_NUMBER_PREFIX = /(?:^|\n)[ \t]*\p{Nd}+→/u;

export interface EditableBlock {
  label: string;
  value: string;
  read_only: boolean;
}

/**
 * The outcome of an edit: the block's new value (`create`: in a block it makes), and what the tool
 * returns, which in Letta 0.16.8 is that new value.
 */
export interface MemoryEdit {
  label: string;
  value: string;
  create?: boolean;
  result: string;
}

const edited = (label: string, value: string, create?: boolean): MemoryEdit => ({
  label,
  value,
  ...(create === undefined ? {} : { create }),
  result: value,
});

/** Python's str.expandtabs(): tabs to the next multiple of 8 columns, per line. */
export function expandTabs(text: string, size = 8): string {
  return text
    .split('\n')
    .map((line) => {
      let out = '';
      for (const ch of line) out += ch === '\t' ? ' '.repeat(size - (out.length % size)) : ch;
      return out;
    })
    .join('\n');
}

function findBlock(blocks: EditableBlock[], label: string): EditableBlock {
  const block = blocks.find((b) => b.label === label);
  if (!block) {
    // str() of Python's KeyError keeps the quotes.
    throw new ToolError(
      `'Block field ${label} does not exist (available sections = ${blocks.map((b) => b.label).join(', ')})'`,
    );
  }
  return block;
}

function writable(blocks: EditableBlock[], label: string): EditableBlock {
  const block = findBlock(blocks, label);
  if (block.read_only) throw new ToolError(READ_ONLY_BLOCK_EDIT_ERROR);
  return block;
}

function rejectLineNumbers(field: string, text: string, checkWarning: boolean): void {
  if (LINE_NUMBER_PREFIX.test(text)) {
    throw new ToolError(
      `${field} contains a line number prefix, which is not allowed. Do not include line numbers when calling memory tools (line numbers are for display purposes only).`,
    );
  }
  if (checkWarning && text.includes(CORE_MEMORY_LINE_NUMBER_WARNING)) {
    throw new ToolError(
      `${field} contains a line number warning, which is not allowed. Do not include line number information when calling memory tools (line numbers are for display purposes only).`,
    );
  }
}

const countOccurrences = (text: string, part: string) =>
  part === '' ? text.length + 1 : text.split(part).length - 1;

/** Python's str.replace: every occurrence, an empty `part` between every character and at both ends. */
const replaceAll = (text: string, part: string, replacement: string) =>
  text.replaceAll(part, () => replacement);

export function memoryReplace(
  blocks: EditableBlock[],
  args: { label: string; old_string: string; new_string: string },
): MemoryEdit {
  const block = writable(blocks, args.label);
  rejectLineNumbers('old_string', args.old_string, true);
  rejectLineNumbers('new_string', args.new_string, false);
  const oldString = expandTabs(args.old_string);
  const newString = expandTabs(args.new_string);
  const current = expandTabs(block.value);
  const occurrences = countOccurrences(current, oldString);
  if (occurrences === 0) {
    throw new ToolError(
      `No replacement was performed, old_string \`${oldString}\` did not appear verbatim in memory block with label \`${args.label}\`.`,
    );
  }
  if (occurrences > 1) {
    const lines = current
      .split('\n')
      .flatMap((line, i) => (line.includes(oldString) ? [i + 1] : []))
      .join(', ');
    throw new ToolError(
      `No replacement was performed. Multiple occurrences of old_string \`${oldString}\` in lines [${lines}]. Please ensure it is unique.`,
    );
  }
  return edited(args.label, replaceAll(current, oldString, newString));
}

/** `field` names the inserted text in errors: `memory`'s insert command calls it `insert_text`. */
export function memoryInsert(
  blocks: EditableBlock[],
  args: { label: string; new_string: string; insert_line?: number },
  field = 'new_string',
): MemoryEdit {
  const block = writable(blocks, args.label);
  rejectLineNumbers(field, args.new_string, true);
  const lines = expandTabs(block.value).split('\n');
  let insertLine = args.insert_line ?? -1;
  if (insertLine === -1) insertLine = lines.length;
  else if (insertLine < 0 || insertLine > lines.length) {
    throw new ToolError(
      `Invalid \`insert_line\` parameter: ${insertLine}. It should be within the range of lines of the memory block: [0, ${lines.length}], or -1 to append to the end of the memory block.`,
    );
  }
  const value = [
    ...lines.slice(0, insertLine),
    ...expandTabs(args.new_string).split('\n'),
    ...lines.slice(insertLine),
  ].join('\n');
  return edited(args.label, value);
}

export function memoryRethink(
  blocks: EditableBlock[],
  args: { label: string; new_memory: string },
): MemoryEdit {
  const block = blocks.find((b) => b.label === args.label);
  if (block?.read_only) throw new ToolError(READ_ONLY_BLOCK_EDIT_ERROR);
  rejectLineNumbers('new_memory', args.new_memory, true);
  return edited(args.label, args.new_memory, !block);
}

/**
 * Letta's voice sleep-time agent's `rethink_user_memory`: rewrites its target block, `human`, created
 * if missing; it returns nothing.
 */
export function rethinkUserMemory(blocks: EditableBlock[], args: { new_memory: string }): MemoryEdit {
  const block = blocks.find((b) => b.label === 'human');
  if (block?.read_only) throw new ToolError(READ_ONLY_BLOCK_EDIT_ERROR);
  return { ...edited('human', args.new_memory, !block), result: '' };
}

export function coreMemoryAppend(
  blocks: EditableBlock[],
  args: { label: string; content: string },
): MemoryEdit {
  const block = writable(blocks, args.label);
  return edited(args.label, `${block.value}\n${args.content}`);
}

export function coreMemoryReplace(
  blocks: EditableBlock[],
  args: { label: string; old_content: string; new_content: string },
): MemoryEdit {
  const block = writable(blocks, args.label);
  if (!block.value.includes(args.old_content)) {
    throw new ToolError(`Old content '${args.old_content}' not found in memory block '${args.label}'`);
  }
  return edited(args.label, replaceAll(block.value, args.old_content, args.new_content));
}
