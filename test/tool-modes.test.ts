/**
 * The execution modes are one list (contracts/tool-modes.ts): every per-mode record is checked
 * against it by the compiler, and a tool type no mode runs is refused, never run as a sandboxed tool.
 * The `@ts-expect-error` lines are the compile-time half, checked by `npm run lint` (tsc): each is a
 * place a throwaway mode added to the list must be written, and an unused one fails to compile.
 */
import {
  EXECUTION_MODES,
  isServerMode,
  runsOnClientMode,
  modeOfActivity,
  toolModes,
  type TaskQueueName,
  type ToolMode,
} from '../contracts/tool-modes';
import type { ToolCallActivities, ToolCallActivity, ToolQueueActivities } from '../contracts/activities';
import { TOOL_MODES } from '../workflows/tool-calls';
import { taskQueues } from '../src/temporal/task-queues';
import { toolMode, type Covering, type ModesOfToolTypes } from '../src/agent/turn-context';
import { DomainError } from '../src/errors';

/** A mode added to the list, as docs/design.md's "Execution modes" adds one: its own activity and queue. */
type WithThrowaway = typeof EXECUTION_MODES & { gpu: { activity: 'runGpuTool'; queue: 'gpu' } };
type ThrowawayMode = keyof WithThrowaway;
type ThrowawayActivity = NonNullable<WithThrowaway[ThrowawayMode]['activity']>;
type ThrowawayQueue = NonNullable<WithThrowaway[ThrowawayMode]['queue']>;

const call: ToolCallActivity = () => Promise.resolve({ status: 'success', output: '' }) as never;

describe('the execution modes, one list', () => {
  it('has a row of the workflow for every mode, and no other', () => {
    expect(Object.keys(TOOL_MODES).sort()).toEqual(toolModes().sort());
    expect(toolModes()).toEqual(['builtin', 'code', 'agent', 'sandbox', 'mcp', 'client']);
  });

  it('names every server mode by its activity, and the client mode by none', () => {
    for (const mode of toolModes()) {
      const { activity } = EXECUTION_MODES[mode];
      if (activity === null) expect(mode).toBe('client');
      else expect(modeOfActivity(activity)).toBe(mode);
    }
    expect(modeOfActivity('callModel')).toBeUndefined();
  });

  it('has a task queue for every queue a mode names', () => {
    const queues = taskQueues('p-', 'dep');
    expect(queues).toEqual({ agent: 'p-dep.agent', sandbox: 'p-dep.tools-sandbox', mcp: 'p-dep.tools-mcp' });
    for (const mode of toolModes()) {
      const { queue } = EXECUTION_MODES[mode];
      if (queue !== null) expect(queues[queue]).toBeDefined();
    }
  });

  it('does not compile a per-mode record that lacks a mode added to the list', () => {
    // @ts-expect-error the workflow's rows lack the throwaway mode's
    const rows: Record<ThrowawayMode, unknown> = TOOL_MODES;
    // @ts-expect-error the activities lack the throwaway mode's
    const activities: Record<ThrowawayActivity, ToolCallActivity> = {} as ToolCallActivities;
    // @ts-expect-error the task queues lack the throwaway mode's own
    const queues: Record<ThrowawayQueue | TaskQueueName, string> = taskQueues('', '');
    // @ts-expect-error no tool type selects the throwaway mode
    const selected: Covering<ModesOfToolTypes, Exclude<ThrowawayMode, 'client'>> = 'gpu';
    // The same records with the list as it is compile.
    const workers: ToolQueueActivities = {
      sandbox: { runCode: call, runSandboxTool: call },
      mcp: { runMcpTool: call },
    };
    expect([rows, activities, queues, selected, workers]).toHaveLength(5);
  });
});

describe('a mode this build lacks', () => {
  it('is neither the client’s nor run here: a call of it is refused, not run in another mode', () => {
    // A turn's tools stored by a newer build, during a deploy, may name a mode this build lacks.
    const newer = 'gpu' as ToolMode;
    expect(isServerMode(newer)).toBe(false);
    expect(runsOnClientMode(newer)).toBe(false);
    expect(toolModes().filter(isServerMode)).toEqual(['builtin', 'code', 'agent', 'sandbox', 'mcp']);
    expect(toolModes().filter(runsOnClientMode)).toEqual(['client']);
  });
});

describe('a tool’s mode', () => {
  it('follows from its tool type, for every mode this server runs', () => {
    const modes = new Set<ToolMode>([
      toolMode({ tool_type: 'custom', name: 'mine' }),
      toolMode({ tool_type: 'external_mcp', name: 'search' }),
      toolMode({ tool_type: 'letta_core', name: 'conversation_search' }),
      toolMode({ tool_type: 'letta_builtin', name: 'run_code' }),
      toolMode({ tool_type: 'letta_multi_agent_core', name: 'send_message_to_agent_async' }),
    ]);
    expect([...modes].sort()).toEqual(
      toolModes()
        .filter((mode) => mode !== 'client')
        .sort(),
    );
  });

  it('is refused for a tool type no mode runs, never taken for a sandboxed tool', () => {
    const unknown = () => toolMode({ tool_type: 'external_composio', name: 'github_star_repo' });
    expect(unknown).toThrow(DomainError);
    expect(unknown).toThrow(
      "Tool 'github_star_repo' is of type 'external_composio', which no execution mode of this server runs",
    );
    try {
      unknown();
    } catch (error) {
      expect((error as DomainError).kind).toBe('conflict');
    }
  });
});
