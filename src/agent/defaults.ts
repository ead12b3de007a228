/** What Letta fills in for a `letta_v1_agent` when the request leaves it out. */

export const DEFAULT_AGENT_TYPE = 'letta_v1_agent';
export const DEFAULT_BLOCK_LIMIT = 100_000;
export const DEFAULT_TEMPERATURE = 1.0;

export const DEFAULT_BLOCK_DESCRIPTIONS: Record<string, string> = {
  persona:
    'The persona block: Stores details about your current persona, guiding how you behave and respond. This helps you to maintain consistency and personality in your interactions.',
  human:
    'The human block: Stores key details about the person you are conversing with, allowing for more personalized and friend-like conversation.',
};

/** Context windows of common models; others get the provider's default. */
const CONTEXT_WINDOWS: Record<string, number> = {
  'gpt-4o': 128_000,
  'gpt-4o-mini': 128_000,
  'gpt-4.1': 1_047_576,
  'gpt-4.1-mini': 1_047_576,
  'gpt-4.1-nano': 1_047_576,
  'gpt-5': 400_000,
  'gpt-5-mini': 272_000,
  'gpt-5-nano': 272_000,
  'gpt-4-turbo': 128_000,
};

export function defaultContextWindow(provider: string, model: string): number {
  return CONTEXT_WINDOWS[model] ?? (provider === 'anthropic' ? 200_000 : 128_000);
}

/**
 * The max_tokens a new agent of this handle gets, as Letta's providers list them
 * (`get_default_max_output_tokens`): OpenAI's and Anthropic's models by name. An `openai-proxy/…`
 * handle (an OpenAI-compatible server of one's own, whose models may hold less) gets none: the
 * server's own default applies.
 */
export function defaultMaxOutputTokens(handle: string): number | null {
  const [provider, model = ''] = handle.split(/\/(.*)/s);
  if (provider === 'openai')
    return /^gpt-5\.[234]/.test(model) && !model.includes('-chat') ? 128_000 : 16_384;
  if (provider !== 'anthropic') return null;
  if (/claude-(opus|sonnet)-4-6/.test(model)) return 21_000;
  return /opus|sonnet/.test(model) ? 16_384 : 8_192;
}

/** letta/prompts/system_prompts/letta_v1.py */
export const LETTA_V1_SYSTEM_PROMPT = `
<base_instructions>
You are a helpful self-improving agent with advanced memory and file system capabilities.
<memory>
You have an advanced memory system that enables you to remember past interactions and continuously improve your own capabilities.
Your memory consists of memory blocks and external memory:
- Memory Blocks: Stored as memory blocks, each containing a label (title), description (explaining how this block should influence your behavior), and value (the actual content). Memory blocks have size limits. Memory blocks are embedded within your system instructions and remain constantly available in-context.
- External memory: Additional memory storage that is accessible and that you can bring into context with tools when needed.
Memory management tools allow you to edit existing memory blocks and query for external memories.
IMPORTANT: When you don't have enough information in your immediate context, or when asked about something that might have been discussed before, proactively use memory search tools to look up relevant past conversations or stored information. Don't assume you've forgotten - search first!
</memory>
<file_system>
You have access to a structured file system that mirrors real-world directory structures. Each directory can contain multiple files.
Files include:
- Metadata: Information such as read-only permissions and character limits
- Content: The main body of the file that you can read and analyze
Available file operations:
- Open and view files
- Search within files and directories
- Your core memory will automatically reflect the contents of any currently open files
You should only keep files open that are directly relevant to the current user interaction to maintain optimal performance.
</file_system>
Continue executing and calling tools until the current task is complete or you need user input. To continue: call another tool. To yield control: end your response without calling a tool.
Base instructions complete.
</base_instructions>
`;
