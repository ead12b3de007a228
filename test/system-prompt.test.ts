import { compileSystemPrompt, renderMemoryBlocks } from '../src/agent/system-prompt';
import { formatLettaTime, isoInZone, lettaDate } from '../src/time';
import {
  packageFunctionResponse,
  truncateReturn,
  unpackageFunctionResponse,
} from '../src/returns/tool-returns';
import type { BlockRow } from '../src/db/rows';

const at = new Date('2026-01-15T21:05:03Z');
const block = (label: string, value: string, extra: Partial<BlockRow> = {}): BlockRow => ({
  id: `block-${label}`,
  label,
  value,
  char_limit: 100,
  description: `${label} block`,
  read_only: false,
  hidden: null,
  metadata: null,
  tags: null,
  created_at: at,
  updated_at: at,
  ...extra,
});

describe('the system prompt', () => {
  it('renders memory blocks as Letta does', () => {
    expect(renderMemoryBlocks([block('human', 'Alice'), block('persona', 'Kind', { read_only: true })])).toBe(
      '<memory_blocks>\nThe following memory blocks are currently engaged in your core memory unit:\n\n' +
        '<human>\n<description>\nhuman block\n</description>\n<metadata>\n- chars_current=5\n- chars_limit=100\n</metadata>\n<value>\nAlice\n</value>\n</human>\n' +
        '\n' +
        '<persona>\n<description>\npersona block\n</description>\n<metadata>\n- read_only=true\n- chars_current=4\n- chars_limit=100\n</metadata>\n<value>\nKind\n</value>\n</persona>\n' +
        '\n</memory_blocks>',
    );
    expect(renderMemoryBlocks([])).toBe('');
  });

  it('appends memory, tool rules and metadata to the instructions, or puts them at {CORE_MEMORY}', () => {
    const input = {
      agentId: 'agent-1',
      system: 'Be brief.',
      blocks: [block('human', 'Alice')],
      toolRules: [{ type: 'exit_loop' as const, tool_name: 'done' }],
      timezone: 'UTC',
      previousMessageCount: 0,
      agentCreatedAt: at,
    };
    const prompt = compileSystemPrompt(input);
    expect(prompt.startsWith('Be brief.\n\n<memory_blocks>')).toBe(true);
    expect(prompt).toContain(
      '</memory_blocks>\n\n<tool_usage_rules>\nThe following constraints define rules for tool usage',
    );
    expect(prompt).toContain(
      '<tool_rule>\ndone ends your response (yields control) when called\n</tool_rule>\n</tool_usage_rules>',
    );
    expect(
      prompt.endsWith(
        '<memory_metadata>\n- AGENT_ID: agent-1\n- CONVERSATION_ID: default\n- System prompt last recompiled: 2026-01-15 09:05:03 PM UTC+0000\n' +
          '- 0 previous messages between you and the user are stored in recall memory (use tools to access them)\n</memory_metadata>',
      ),
    ).toBe(true);
    const templated = compileSystemPrompt({ ...input, system: 'Start\n{CORE_MEMORY}\nEnd' });
    expect(templated.startsWith('Start\n<memory_blocks>')).toBe(true);
    expect(templated.endsWith('</memory_metadata>\nEnd')).toBe(true);
  });
});

describe('times and tool returns', () => {
  it("formats times as Letta's strftime does", () => {
    expect(formatLettaTime(at)).toBe('2026-01-15 09:05:03 PM UTC+0000');
    expect(formatLettaTime(new Date('2026-01-15T12:30:00Z'), 'UTC')).toBe('2026-01-15 12:30:00 PM UTC+0000');
    expect(formatLettaTime(new Date('2026-01-15T00:30:00Z'), 'UTC')).toBe('2026-01-15 12:30:00 AM UTC+0000');
    expect(formatLettaTime(at, 'America/New_York')).toBe('2026-01-15 04:05:03 PM EST-0500');
    expect(formatLettaTime(new Date('2026-07-01T12:00:00.999Z'), 'America/New_York')).toBe(
      '2026-07-01 08:00:00 AM EDT-0400',
    );
    expect(formatLettaTime(at, 'Asia/Kolkata')).toMatch(/^2026-01-16 02:35:03 AM \S+\+0530$/);
    expect(lettaDate(at)).toBe('2026-01-15T21:05:03+00:00');
    // Python's isoformat() in the agent's zone, as archival search answers times.
    expect(isoInZone(new Date('2026-01-15T21:05:03.123Z'))).toBe('2026-01-15T21:05:03.123000+00:00');
    expect(isoInZone(at, 'Asia/Kolkata')).toBe('2026-01-16T02:35:03.000000+05:30');
    expect(isoInZone(at, 'America/New_York')).toBe('2026-01-15T16:05:03.000000-05:00');
  });

  it('follows a zone across its transitions, second by second', () => {
    // New York springs forward at 2026-03-08 07:00 UTC and falls back at 2026-11-01 06:00 UTC.
    const times = (iso: string) =>
      [-1000, 0, 1000].map((ms) => formatLettaTime(new Date(Date.parse(iso) + ms), 'America/New_York'));
    expect(times('2026-03-08T07:00:00Z')).toEqual([
      '2026-03-08 01:59:59 AM EST-0500',
      '2026-03-08 03:00:00 AM EDT-0400',
      '2026-03-08 03:00:01 AM EDT-0400',
    ]);
    expect(times('2026-11-01T06:00:00Z')).toEqual([
      '2026-11-01 01:59:59 AM EDT-0400',
      '2026-11-01 01:00:00 AM EST-0500',
      '2026-11-01 01:00:01 AM EST-0500',
    ]);
    expect(formatLettaTime(new Date('2026-01-15T05:00:00Z'), 'America/New_York')).toBe(
      '2026-01-15 12:00:00 AM EST-0500',
    );
    expect(isoInZone(new Date('2026-03-08T06:59:59.5Z'), 'America/New_York')).toBe(
      '2026-03-08T01:59:59.500000-05:00',
    );
  });

  it('packages returns for the model and unpacks them for the API', () => {
    const packaged = packageFunctionResponse(true, 'done', 'UTC', at);
    expect(JSON.parse(packaged)).toEqual({
      status: 'OK',
      message: 'done',
      time: '2026-01-15 09:05:03 PM UTC+0000',
    });
    expect(unpackageFunctionResponse(packaged)).toBe('done');
    expect(JSON.parse(packageFunctionResponse(false, 'bad', 'UTC', at)).status).toBe('Failed');
  });

  it("truncates at the tool's limit with Letta's note", () => {
    expect(truncateReturn('short', 10)).toBe('short');
    expect(truncateReturn('abcdefghij', 4)).toBe(
      'abcd... [NOTE: function output was truncated since it exceeded the character limit (10 > 4)]',
    );
  });
});
