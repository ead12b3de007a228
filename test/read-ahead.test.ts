/**
 * The next call's read, started while a call runs (activities/read-ahead.ts): taken once,
 * and only while young; and which calls the workflow names as next (workflows/tool-executors.ts).
 */
import { MAX_AGE_MS, ReadsAhead } from '../activities/read-ahead';
import type { AgentStepLimits, StepTool } from '../activities/contracts';
import type { ToolCallKey, ToolCallRead } from '../src/db/tool-calls';
import { readAheadOf, runToolCalls } from '../workflows/tool-executors';

const key = (toolCallId: string): ToolCallKey => ({
  agentId: 'agent-1',
  messageId: 'message-1',
  toolCallId,
  toolId: 'tool-1',
  toolVersion: 1,
});
const notDone: ToolCallRead = { arguments: '{}' };

describe('reads started for the calls to come', () => {
  let now = 0;
  const reads = () => new ReadsAhead(() => now);
  beforeEach(() => (now = 1_000));

  it('gives a call its read once', async () => {
    const ahead = reads();
    ahead.start(key('a'), async () => notDone);
    now += MAX_AGE_MS;
    expect(await ahead.take(key('a'))).toBe(notDone);
    expect(await ahead.take(key('a'))).toBeUndefined();
  });

  it('gives none older than its bound, nor one started for another call or version of the tool', async () => {
    const ahead = reads();
    ahead.start(key('a'), async () => notDone);
    now += MAX_AGE_MS + 1;
    expect(await ahead.take(key('a'))).toBeUndefined();
    ahead.start(key('b'), async () => notDone);
    expect(await ahead.take({ ...key('b'), toolVersion: 2 })).toBeUndefined();
    ahead.start(key('c'), async () => notDone);
    expect(await ahead.take({ ...key('c'), messageId: 'message-2' })).toBeUndefined();
  });

  it('gives none for a read that failed: the call reads again', async () => {
    const ahead = reads();
    ahead.start(key('a'), async () => {
      throw new Error('connection lost');
    });
    expect(await ahead.take(key('a'))).toBeUndefined();
  });

  it('waits for a read still under way, and judges its age by when it started', async () => {
    const ahead = reads();
    let finish!: (read: ToolCallRead) => void;
    ahead.start(key('a'), () => new Promise((resolve) => (finish = resolve)));
    const taken = ahead.take(key('a'));
    now += MAX_AGE_MS + 1;
    finish(notDone);
    expect(await taken).toBeUndefined();
  });
});

describe('the call a call names as next', () => {
  const limits = { localToolCalls: true } as AgentStepLimits;
  const tool = (mode: StepTool['mode'], local = false): StepTool => ({
    id: `${mode}-tool`,
    name: `${mode}_tool`,
    mode,
    parallel: false,
    version: 3,
    local,
  });
  const next = (t: StepTool) => ({ toolCallId: 'call-2', toolName: t.name, tool: t });

  it('is the next call of the reply when both run through the same local activity', () => {
    const mcp = tool('mcp');
    expect(readAheadOf(limits, mcp, next(mcp))).toEqual({
      toolCallId: 'call-2',
      toolName: 'mcp_tool',
      toolId: 'mcp-tool',
      toolVersion: 3,
    });
    expect(readAheadOf(limits, tool('builtin', true), next(tool('builtin', true)))).toBeDefined();
  });

  it('is none for a call of another activity, a remote activity or the client', () => {
    expect(readAheadOf(limits, tool('mcp'), next(tool('sandbox')))).toBeUndefined();
    expect(readAheadOf(limits, tool('mcp'), next(tool('client')))).toBeUndefined();
    expect(readAheadOf({ ...limits, localToolCalls: false }, tool('mcp'), next(tool('mcp')))).toBeUndefined();
    expect(readAheadOf(limits, tool('builtin'), next(tool('builtin')))).toBeUndefined();
    expect(readAheadOf(limits, tool('mcp'), undefined)).toBeUndefined();
  });

  it('comes with each call run in order, and with none run at once', async () => {
    const calls = ['a', 'b', 'c'].map((id) => ({ id, name: id }));
    const seen: [string, string | undefined][] = [];
    const run = async (call: { id: string }, after?: { id: string }) => {
      seen.push([call.id, after?.id]);
      return { status: 'success' as const };
    };
    await runToolCalls(calls, [], run);
    expect(seen).toEqual([
      ['a', 'b'],
      ['b', 'c'],
      ['c', undefined],
    ]);
    seen.length = 0;
    const parallel = calls.map((c) => ({ ...tool('mcp'), name: c.name, parallel: true }));
    await runToolCalls(calls, parallel, run);
    expect(seen).toEqual([
      ['a', undefined],
      ['b', undefined],
      ['c', undefined],
    ]);
  });
});
