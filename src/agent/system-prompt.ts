import type { BlockRow } from '../db/rows';
import type { ToolRule } from '../schemas/tool-rules';
import { compileRulePrompts, TOOL_RULES_DESCRIPTION } from '../../contracts/tool-rules';
import { formatLettaTime } from '../time';

const CORE_MEMORY = '{CORE_MEMORY}';

/** Letta's `_render_memory_blocks_standard`: nothing at all when the agent has no blocks. */
export function renderMemoryBlocks(
  blocks: Pick<BlockRow, 'label' | 'value' | 'description' | 'read_only' | 'char_limit'>[],
): string {
  if (blocks.length === 0) return '';
  const rendered = blocks.map((block) => {
    const label = block.label || 'block';
    const value = block.value ?? '';
    const metadata = `${block.read_only ? '\n- read_only=true' : ''}\n- chars_current=${value.length}\n- chars_limit=${block.char_limit}\n`;
    return (
      `<${label}>\n<description>\n${block.description ?? ''}\n</description>\n` +
      `<metadata>${metadata}</metadata>\n<value>\n${value}\n</value>\n</${label}>\n`
    );
  });
  return `<memory_blocks>\nThe following memory blocks are currently engaged in your core memory unit:\n\n${rendered.join('\n')}\n</memory_blocks>`;
}

export interface SystemPromptInput {
  agentId: string;
  system: string;
  blocks: BlockRow[];
  toolRules: ToolRule[];
  timezone: string;
  /** Messages of the agent that are no longer in the model's context. */
  previousMessageCount: number;
  /** When the agent was created; the prompt's timestamp when no block was edited since. */
  agentCreatedAt: Date;
  /** The conversation the prompt is for; null: the agent's default conversation. */
  conversationId?: string | null;
  /** The attached folders and open files, rendered (src/memory/file-views.ts renderDirectories). */
  directories?: string;
}

/**
 * The system message as Letta compiles it: the agent's instructions, then its memory blocks, the tool
 * rules, the folders and open files (`<directories>`) and the memory metadata, at `{CORE_MEMORY}` or appended. The timestamp is the last memory edit,
 * so the prompt (and a provider's prefix cache) changes only when memory does.
 */
export function compileSystemPrompt(input: SystemPromptInput): string {
  let memory = renderMemoryBlocks(input.blocks);
  const rules = compileRulePrompts(input.toolRules);
  if (rules) memory += `\n\n<tool_usage_rules>\n${TOOL_RULES_DESCRIPTION}\n\n${rules}\n</tool_usage_rules>`;
  memory += input.directories ?? '';
  const lastEdit = new Date(
    Math.max(
      new Date(input.agentCreatedAt).getTime(),
      ...input.blocks.map((b) => new Date(b.updated_at).getTime()),
    ),
  );
  const metadata = [
    '<memory_metadata>',
    `- AGENT_ID: ${input.agentId}`,
    `- CONVERSATION_ID: ${input.conversationId ?? 'default'}`,
    `- System prompt last recompiled: ${formatLettaTime(lastEdit, input.timezone)}`,
    `- ${input.previousMessageCount} previous messages between you and the user are stored in recall memory (use tools to access them)`,
    '</memory_metadata>',
  ].join('\n');
  const full = `${memory}\n\n${metadata}`;
  const template = input.system.includes(CORE_MEMORY) ? input.system : `${input.system}\n\n${CORE_MEMORY}`;
  return template.replace(CORE_MEMORY, full);
}
